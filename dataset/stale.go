package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ownerFile, inside a dataset's temporary directory, names the process
// building it ("pid 123\nhost h\n"), so that a later run can tell a
// directory whose run was killed (kill -9, out of memory, a power cut)
// from one still being built. It is removed before the directory is
// moved into place.
const ownerFile = ".cascade-owner"

// Ages past which a temporary directory is taken as left by a dead run
// when its owner cannot be checked: without an owner file (a run killed
// before it wrote one, a dataset moved aside while being replaced, or a
// version of cascade that wrote none), and when another host wrote it.
const (
	staleAge        = time.Hour
	staleForeignAge = 24 * time.Hour
)

// writeOwner writes the owner file into dir.
func writeOwner(dir string) error {
	host, _ := os.Hostname()
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "pid %d\nhost %s\n", os.Getpid(), host), 0o644)
}

// readOwner reads dir's owner file; ok is false when there is none or it
// cannot be read.
func readOwner(dir string) (pid int, host string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, "", false
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch k {
		case "pid":
			pid, _ = strconv.Atoi(v)
		case "host":
			host = v
		}
	}
	return pid, host, pid > 0
}

// tempName reports whether name is a temporary directory NewWriter
// makes beside a dataset named base (".BASE.tmp-DIGITS"), or one Publish
// moves the old dataset to (".BASE.tmp-DIGITS.old").
func tempName(name, base string) (temp, old bool) {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	if !ok {
		return false, false
	}
	rest, old = strings.CutSuffix(rest, ".old")
	if rest == "" || strings.Trim(rest, "0123456789") != "" {
		return false, false
	}
	return true, old
}

// abandoned reports whether the run that made the temporary directory dir
// is gone: its owner file names a process of this host that no longer
// exists; or it has none and dir has not changed for staleAge; or another
// host wrote it and dir has not changed for staleForeignAge. now is the
// time to judge ages by.
func abandoned(dir string, now time.Time) bool {
	changed, err := lastChange(dir)
	if err != nil {
		return false
	}
	pid, host, ok := readOwner(dir)
	if !ok {
		return now.Sub(changed) > staleAge
	}
	if me, _ := os.Hostname(); host != me {
		return now.Sub(changed) > staleForeignAge
	}
	return processGone(pid)
}

// lastChange is when path or its entries last changed: its modification
// time or, where it is read, its change time, whichever is later.
func lastChange(path string) (time.Time, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return time.Time{}, err
	}
	t := fi.ModTime()
	if c, ok := changeTime(fi); ok && c.After(t) {
		t = c
	}
	return t, nil
}

// CleanStale removes the temporary directories that runs killed before
// they finished left beside the dataset out (see abandoned), and puts
// back a dataset such a run had moved aside to replace it when nothing
// took its place. Each is said through note. What cannot be removed is
// left; the run goes on.
func CleanStale(out string, now time.Time, note func(string)) {
	out = filepath.Clean(out)
	parent, base := filepath.Dir(out), filepath.Base(out)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		temp, old := tempName(e.Name(), base)
		if !temp || !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if !abandoned(dir, now) {
			continue
		}
		if old {
			// The dataset out held, moved aside by a run killed before it
			// put its own in place: it goes back.
			_, err := os.Stat(out)
			if _, e := os.Stat(filepath.Join(dir, SpansFile)); os.IsNotExist(err) && e == nil {
				os.Remove(filepath.Join(dir, ownerFile))
				if os.Rename(dir, out) == nil && note != nil {
					note(fmt.Sprintf("restored %s, which an interrupted run had moved aside to %s", out, dir))
				}
				continue
			}
		}
		if os.RemoveAll(dir) == nil && note != nil {
			note("removed a temporary dataset left by an interrupted run: " + dir)
		}
	}
}
