package collect

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A segment is an append-only file of records in the work directory:
//
//	header  8 bytes   "CSEG" then version 1 then three zero bytes
//	frame   ...       repeated: length (uint32, little-endian, > 0),
//	                  CRC-32C of the payload (uint32, little-endian),
//	                  payload (an encoded record, record.go)
//
// A batch is acknowledged only after its frame was written and the file
// fsynced, and a new segment's directory entry is fsynced before its first
// frame, so every acknowledged record survives a crash. A crash can only
// cut the last frame short (or leave garbage after it): the reader stops at
// the first frame whose length runs past the end of the file or whose
// checksum does not match, and reports how many bytes it discarded. Those
// bytes were never acknowledged.

// Segment file layout constants.
const (
	segmentMagic   = "CSEG"
	segmentVersion = 1
	segmentHeader  = 8
	frameHeader    = 8
	segmentExt     = ".seg"
	lockName       = "lock"
)

// maxFrame caps a frame's payload. The receiver's records are bounded by
// its request size limit and pulled answers are split into records far
// below this; a larger length is damage, not data.
const maxFrame = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errNotSegment is returned for a file in the work directory whose header
// is not a segment header.
var errNotSegment = errors.New("not a cascade collect segment")

func segmentHeaderBytes() []byte {
	h := make([]byte, segmentHeader)
	copy(h, segmentMagic)
	h[4] = segmentVersion
	return h
}

// segmentName is the file name of segment seq.
func segmentName(seq int) string { return fmt.Sprintf("%08d%s", seq, segmentExt) }

// listSegments returns the segments of dir in sequence order, with their
// sequence numbers.
func listSegments(dir string) ([]string, []int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("list segments: %w", err)
	}
	type seg struct {
		name string
		seq  int
	}
	var segs []seg
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, segmentExt) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(name, segmentExt))
		if err != nil || n < 0 {
			continue
		}
		segs = append(segs, seg{name, n})
	}
	slices.SortFunc(segs, func(a, b seg) int { return a.seq - b.seq })
	paths := make([]string, len(segs))
	seqs := make([]int, len(segs))
	for i, s := range segs {
		paths[i] = filepath.Join(dir, s.name)
		seqs[i] = s.seq
	}
	return paths, seqs, nil
}

// segmentInfo describes what reading one segment found.
type segmentInfo struct {
	records int
	// good is the offset just past the last complete record.
	good int64
	// size is the file's size; size-good bytes were discarded.
	size int64
	// torn says why reading stopped before the end, empty when it did not.
	torn string
}

// readSegment calls fn with the payload of every complete record of the
// segment at path, in order. The payload is only valid during the call.
// A torn or damaged tail ends the reading without an error: info says
// where and why. An error is an I/O error, a file that is no segment, or
// fn's error.
func readSegment(path string, fn func(payload []byte) error) (segmentInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return segmentInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return segmentInfo{}, err
	}
	info, err := scanSegment(bufio.NewReaderSize(f, 1<<20), st.Size(), fn)
	if err != nil {
		return info, fmt.Errorf("segment %s: %w", path, err)
	}
	return info, nil
}

// scanSegment reads a segment of the given size from r; see readSegment.
func scanSegment(r io.Reader, size int64, fn func(payload []byte) error) (segmentInfo, error) {
	info := segmentInfo{size: size}
	if size < segmentHeader {
		// Created but cut before its header was complete: it holds
		// nothing that was acknowledged.
		info.torn = "header incomplete"
		return info, nil
	}
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:segmentHeader]); err != nil {
		return info, err
	}
	if string(hdr[:4]) != segmentMagic {
		return info, errNotSegment
	}
	if hdr[4] != segmentVersion {
		return info, fmt.Errorf("segment version %d: this cascade reads version %d", hdr[4], segmentVersion)
	}
	off := int64(segmentHeader)
	info.good = off
	var buf []byte
	for off < size {
		if size-off < frameHeader {
			info.torn = "frame header cut short"
			return info, nil
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return info, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:])
		switch {
		case n == 0 || n > maxFrame:
			info.torn = fmt.Sprintf("bad frame length %d", n)
			return info, nil
		case n > size-off-frameHeader:
			info.torn = "frame cut short"
			return info, nil
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return info, err
		}
		if crc32.Checksum(buf, castagnoli) != sum {
			info.torn = "checksum mismatch"
			return info, nil
		}
		if err := fn(buf); err != nil {
			return info, err
		}
		off += frameHeader + n
		info.good = off
		info.records++
	}
	return info, nil
}

// appendFrame appends the frame of one payload to dst.
func appendFrame(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// store is the work directory of one cascade collect: the lock that keeps
// a second collect off it, and the segment being appended to. Earlier
// segments (from this run or an earlier, crashed one) are never written
// again.
type store struct {
	dir          string
	segmentBytes int64
	lock         *fileLock
	// syncHook, when set (tests), runs before each fsync: a slow disk.
	syncHook func()

	mu struct {
		sync.Mutex
		f     *os.File
		seq   int   // sequence number of f, or of the last segment
		size  int64 // bytes in f
		frame []byte
	}
}

// openStore creates (if needed) and locks the work directory dir. New
// segments are numbered after the existing ones, which are left as they
// are.
func openStore(dir string, segmentBytes int64) (*store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	if err := syncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("work directory %s: %w", dir, err)
	}
	s := &store{dir: dir, segmentBytes: segmentBytes, lock: lock}
	_, seqs, err := listSegments(dir)
	if err != nil {
		lock.unlock()
		return nil, err
	}
	if len(seqs) > 0 {
		s.mu.seq = seqs[len(seqs)-1]
	}
	return s, nil
}

// appendRecords writes the frames of payloads to the current segment and
// fsyncs it; when it returns nil every payload is durable. A segment that
// has reached segmentBytes is closed first and a new one started. After a
// write or sync error the segment is abandoned (its tail may be torn) and
// the next call starts a new one.
func (s *store) appendRecords(payloads ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.f != nil && s.mu.size >= s.segmentBytes {
		if err := s.closeLocked(); err != nil {
			return err
		}
	}
	if s.mu.f == nil {
		if err := s.rotateLocked(); err != nil {
			return err
		}
	}
	s.mu.frame = s.mu.frame[:0]
	for _, p := range payloads {
		s.mu.frame = appendFrame(s.mu.frame, p)
	}
	_, err := s.mu.f.Write(s.mu.frame)
	if err == nil {
		if s.syncHook != nil {
			s.syncHook()
		}
		err = s.mu.f.Sync()
	}
	if cap(s.mu.frame) > 4<<20 {
		s.mu.frame = nil // do not keep a huge buffer
	}
	if err != nil {
		name := s.mu.f.Name()
		s.mu.f.Close()
		s.mu.f = nil
		return fmt.Errorf("write segment %s: %w", name, err)
	}
	s.mu.size += int64(len(s.mu.frame))
	return nil
}

// rotateLocked starts the next segment: the file with its header, fsynced,
// and its directory entry, fsynced.
func (s *store) rotateLocked() error {
	seq := s.mu.seq + 1
	path := filepath.Join(s.dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("new segment: %w", err)
	}
	_, err = f.Write(segmentHeaderBytes())
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("new segment %s: %w", path, err)
	}
	s.mu.f, s.mu.seq, s.mu.size = f, seq, segmentHeader
	return nil
}

// closeLocked closes the current segment; its content is already synced.
func (s *store) closeLocked() error {
	if s.mu.f == nil {
		return nil
	}
	err := s.mu.f.Close()
	s.mu.f = nil
	if err != nil {
		return fmt.Errorf("close segment: %w", err)
	}
	return nil
}

// finish closes the current segment, keeping the lock: the segments can
// be read.
func (s *store) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

// close closes the current segment and releases the lock.
func (s *store) close() error {
	s.mu.Lock()
	err := s.closeLocked()
	s.mu.Unlock()
	s.lock.unlock()
	return err
}

// syncDir fsyncs a directory, making the entries created in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if e := d.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
