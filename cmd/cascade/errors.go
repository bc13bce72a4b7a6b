package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

var (
	errNoInputs = errors.New("give at least one PATH or --metrics PATH")
	errNoOut    = errors.New("--out DATASET is required")
)

// exampleCommand is the README's first command: the bundled capture,
// analysed end to end, from the repository's root.
const exampleCommand = "cascade analyze testdata/hotrod-baseline/traces-otlp.json.gz --metrics testdata/hotrod-baseline/prometheus --out /tmp/cascade-report"

// outKind says what an output flag names, and so where the command
// creates things.
type outKind int

const (
	outDir     outKind = iota // a directory, written inside (analyze)
	outDataset                // a directory moved into place from beside it (ingest, collect)
	outFile                   // a file, renamed into place from beside it
)

// checkOut fails, as a usage error naming the flag and the path as the
// user gave it, when the output cannot be made there: a file where a
// directory goes (or the other way round), a file above it, or a
// directory nothing can be created in. The commands would otherwise fail
// later naming a temporary file of their own. An empty path is left to
// the command.
func checkOut(flag, path string, kind outKind) error {
	if path == "" {
		return nil
	}
	fail := func(format string, args ...any) error {
		return usageError{fmt.Errorf("--%s %s: %s", flag, path, fmt.Sprintf(format, args...))}
	}
	p := filepath.Clean(path)
	if fi, err := os.Stat(p); err == nil {
		switch {
		case kind == outFile && fi.IsDir():
			return fail("a directory is in the way: give a file path")
		case kind != outFile && !fi.IsDir():
			return fail("a file is in the way: give a directory path")
		}
	}
	// Where the command creates things: the nearest directory that
	// exists at or above it.
	dir := p
	if kind != outDir {
		dir = filepath.Dir(p)
	}
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fail("%s is a file, not a directory", dir)
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return fail("%v", reason(err))
		}
		dir = parent
	}
	probe, err := os.MkdirTemp(dir, ".cascade-probe-")
	if err != nil {
		return fail("cannot create anything in %s (%v)", dir, reason(err))
	}
	os.Remove(probe)
	return nil
}

// reason is an I/O error without the operation and path that
// *fs.PathError prefixes: "permission denied".
func reason(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
