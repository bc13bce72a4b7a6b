package collect

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeTestSegment appends n records ("record 0", "record 1", ...) through
// a store and returns the segment's path and each record's end offset.
func writeTestSegment(t *testing.T, dir string, n int) (string, []int64) {
	t.Helper()
	st, err := openStore(dir, 1<<30)
	require.NoError(t, err)
	var ends []int64
	off := int64(segmentHeader)
	for i := range n {
		p := fmt.Appendf(nil, "record %d %s", i, bytes.Repeat([]byte{'x'}, i*7))
		require.NoError(t, st.appendRecords(p))
		off += frameHeader + int64(len(p))
		ends = append(ends, off)
	}
	require.NoError(t, st.close())
	paths, _, err := listSegments(dir)
	require.NoError(t, err)
	require.Len(t, paths, 1)
	return paths[0], ends
}

func readAll(t *testing.T, path string) ([]string, segmentInfo) {
	t.Helper()
	var got []string
	info, err := readSegment(path, func(p []byte) error {
		got = append(got, string(p))
		return nil
	})
	require.NoError(t, err)
	return got, info
}

// TestSegmentTornTail cuts a segment at every byte and checks that the
// reader returns exactly the records complete before the cut.
func TestSegmentTornTail(t *testing.T) {
	dir := t.TempDir()
	path, ends := writeTestSegment(t, filepath.Join(dir, "work"), 6)
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, ends[len(ends)-1], int64(len(full)))
	cut := filepath.Join(dir, "cut.seg")
	for size := 0; size <= len(full); size++ {
		require.NoError(t, os.WriteFile(cut, full[:size], 0o644))
		got, info := readAll(t, cut)
		complete := 0
		for _, e := range ends {
			if e <= int64(size) {
				complete++
			}
		}
		require.Len(t, got, complete, "cut at %d", size)
		for i, g := range got {
			require.Contains(t, g, fmt.Sprintf("record %d ", i))
		}
		atBoundary := size == segmentHeader
		for _, e := range ends {
			atBoundary = atBoundary || e == int64(size)
		}
		if atBoundary {
			require.Empty(t, info.torn, "cut at %d", size)
		} else {
			require.NotEmpty(t, info.torn, "cut at %d", size)
		}
		if size >= segmentHeader {
			require.Equal(t, int64(size)-info.good, int64(size)-max(int64(segmentHeader), lastEnd(ends, size)))
		}
	}
}

func lastEnd(ends []int64, size int) int64 {
	var last int64
	for _, e := range ends {
		if e <= int64(size) {
			last = e
		}
	}
	return last
}

func TestSegmentDamagedTail(t *testing.T) {
	dir := t.TempDir()
	path, ends := writeTestSegment(t, filepath.Join(dir, "work"), 3)
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	tests := []struct {
		name string
		data []byte
		want int
		torn string
	}{
		{name: "zeros appended", data: append(append([]byte{}, full...), make([]byte, 64)...), want: 3, torn: "bad frame length 0"},
		{name: "garbage appended", data: append(append([]byte{}, full...), bytes.Repeat([]byte{0xff}, 64)...), want: 3, torn: "bad frame length"},
		{name: "last payload flipped", data: flip(full, len(full)-2), want: 2, torn: "checksum mismatch"},
		{name: "length past end", data: append(append([]byte{}, full...), 9, 0, 0, 0, 0, 0, 0, 0, 'a'), want: 3, torn: "frame cut short"},
		{name: "middle record flipped", data: flip(full, int(ends[0])+frameHeader+1), want: 1, torn: "checksum mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.seg")
			require.NoError(t, os.WriteFile(p, tc.data, 0o644))
			got, info := readAll(t, p)
			require.Len(t, got, tc.want)
			require.Contains(t, info.torn, tc.torn)
		})
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x55
	return c
}

func TestSegmentNotASegment(t *testing.T) {
	p := filepath.Join(t.TempDir(), "00000001.seg")
	require.NoError(t, os.WriteFile(p, []byte("hello, world"), 0o644))
	_, err := readSegment(p, func([]byte) error { return nil })
	require.ErrorIs(t, err, errNotSegment)

	h := segmentHeaderBytes()
	h[4] = 9
	require.NoError(t, os.WriteFile(p, h, 0o644))
	_, err = readSegment(p, func([]byte) error { return nil })
	require.ErrorContains(t, err, "segment version 9")
}

func TestStoreRotatesAndResumes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	st, err := openStore(dir, 100)
	require.NoError(t, err)
	for range 5 {
		require.NoError(t, st.appendRecords(bytes.Repeat([]byte{'a'}, 60)))
	}
	require.NoError(t, st.close())
	paths, seqs, err := listSegments(dir)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, seqs, "a segment closes once it passes 100 bytes")
	require.Len(t, paths, 3)

	// A second store continues the numbering and never touches old ones.
	st, err = openStore(dir, 100)
	require.NoError(t, err)
	require.NoError(t, st.appendRecords([]byte("b")))
	require.NoError(t, st.close())
	_, seqs, err = listSegments(dir)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3, 4}, seqs)
	n := 0
	for _, p := range paths {
		got, info := readAll(t, p)
		require.Empty(t, info.torn)
		n += len(got)
	}
	require.Equal(t, 5, n)
}

func TestStoreLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	st, err := openStore(dir, 1<<20)
	require.NoError(t, err)
	_, err = openStore(dir, 1<<20)
	require.ErrorContains(t, err, "in use by process")
	require.NoError(t, st.close())
	st, err = openStore(dir, 1<<20)
	require.NoError(t, err)
	require.NoError(t, st.close())
}

// TestFinalizeNewestSegmentWithoutHeader: a crash right after a new
// segment's creation leaves it without a header; whatever a power cut
// adds after that is no acknowledged record, so finalize discards it.
// An older segment without a header is damage, and an error.
func TestFinalizeNewestSegmentWithoutHeader(t *testing.T) {
	tests := []struct {
		name    string
		garbled int // the segment whose header is garbage: 1 (older) or 2 (newest)
		wantErr bool
	}{
		{"newest", 2, false},
		{"older", 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			out, work := filepath.Join(root, "ds"), filepath.Join(root, "ds.collect")
			st, err := openStore(work, 1)
			require.NoError(t, err)
			body := encodeRecord(nil, &batch{spans: readSpansSlice(t, testTraces(7, 3, "kept"))})
			require.NoError(t, st.appendRecords(body))
			require.NoError(t, st.appendRecords(body))
			require.NoError(t, st.close())
			paths, _, err := listSegments(work)
			require.NoError(t, err)
			require.Len(t, paths, 2)
			// Half a frame where the header should be.
			frame := appendFrame(nil, body)
			require.NoError(t, os.WriteFile(paths[tc.garbled-1], frame[:len(frame)/2], 0o644))
			fin, err := finalize(context.Background(), out, work, 1024, func(string, ...any) {})
			if tc.wantErr {
				require.ErrorIs(t, err, errNotSegment)
				return
			}
			require.NoError(t, err)
			require.Equal(t, int64(len(frame)/2), fin.discarded)
		})
	}
}
