package dataset

import (
	"bytes"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"
)

// changeTime is fi's change time (a rename sets it, not the modification
// time).
func changeTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), true
}

// exited reports whether process pid has exited and not yet been
// collected by its parent: its state in /proc/PID/stat, after the
// parenthesised command name, is Z (zombie) or X (dead).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}
