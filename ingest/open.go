package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompressed wraps r so that gzip and zstd streams read as their content,
// recognised by their magic bytes rather than by name (stdin has none). The
// returned name drops a .gz/.zst/.zstd suffix. The closer releases the
// decompressor, not r.
func decompressed(name string, r io.Reader) (io.Reader, string, func(), error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(4)
	base := name
	for _, ext := range []string{".gz", ".zst", ".zstd"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			base = base[:len(base)-len(ext)]
			break
		}
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, name, nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		zr.Multistream(true)
		return bufio.NewReaderSize(zr, 1<<20), base, func() { zr.Close() }, nil
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, name, nil, fmt.Errorf("%s: zstd: %w", name, err)
		}
		return bufio.NewReaderSize(zr, 1<<20), base, zr.Close, nil
	}
	return br, name, func() {}, nil
}

// inputPath is one file to read; walked marks a file found by walking a
// directory rather than named by the user.
type inputPath struct {
	path   string
	walked bool
}

// walkedDir is a directory named on the command line: the files the walk
// passed over (hidden or documentation), and how many it found to read.
type walkedDir struct {
	path   string
	passed []string
	files  []string
}

// expandPaths turns the command line's paths into the files to read:
// a directory contributes every regular file below it (hidden files and
// directories skipped), in lexical order; "-" stands for stdin and is kept.
func expandPaths(paths []string) ([]inputPath, []walkedDir, error) {
	var out []inputPath
	var dirs []walkedDir
	for _, p := range paths {
		if p == "-" {
			out = append(out, inputPath{path: p})
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			out = append(out, inputPath{path: p})
			continue
		}
		var files []string
		dir := walkedDir{path: p}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				dir.passed = append(dir.passed, path+" (hidden)")
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case !d.Type().IsRegular():
			case isDocFile(d.Name()):
				dir.passed = append(dir.passed, path+" (documentation)")
			default:
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			out = append(out, inputPath{path: f, walked: true})
		}
		dir.files = files
		dirs = append(dirs, dir)
	}
	return out, dirs, nil
}

// isDocFile reports whether a file found in a directory is documentation
// kept beside data (README.md, LICENSE, SOURCE.md, NOTICE), which a
// directory walk skips; such a file named on the command line is read.
func isDocFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".txt", ".rst", ".html":
		return true
	}
	switch strings.ToUpper(name) {
	case "LICENSE", "LICENCE", "NOTICE", "COPYING", "AUTHORS":
		return true
	}
	return false
}
