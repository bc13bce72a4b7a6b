package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"cascade/report"
)

// outputWidth is the width the compact tables fit on w: on a terminal,
// $COLUMNS, else the terminal's size; elsewhere report.DefaultWidth, so
// that piped or redirected output is the same on every machine.
func outputWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return textWidth(false, "", nil)
	}
	return textWidth(true, os.Getenv("COLUMNS"), func() (int, error) {
		cols, _, err := term.GetSize(int(f.Fd()))
		return cols, err
	})
}

// textWidth picks the width: off a terminal report.DefaultWidth; on one,
// columns ($COLUMNS) when it is a positive number, else what size says,
// else report.DefaultWidth; never below report.MinWidth.
func textWidth(terminal bool, columns string, size func() (int, error)) int {
	if !terminal {
		return report.DefaultWidth
	}
	n, err := strconv.Atoi(strings.TrimSpace(columns))
	if err != nil || n <= 0 {
		n = 0
		if size != nil {
			if cols, err := size(); err == nil && cols > 0 {
				n = cols
			}
		}
	}
	if n == 0 {
		n = report.DefaultWidth
	}
	return max(n, report.MinWidth)
}

// printWrapped writes s wrapped at spaces to width columns.
func printWrapped(w io.Writer, width int, s string) {
	for _, line := range report.Wrap(s, width) {
		fmt.Fprintln(w, line)
	}
}
