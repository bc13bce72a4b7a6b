package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Shard names one part of a batch of replays split across processes or
// machines: shard Index of Count, counted from 0. A stage that shards
// (fit's grid points, rank's candidates) numbers its work units 0, 1, …
// in a fixed order and gives unit u to shard u mod Count, so every
// process that reads the same inputs agrees on who does what. The zero
// Shard (Count 0) is the whole batch, unsharded.
type Shard struct {
	// Index is this shard's number, 0 ≤ Index < Count.
	Index int `json:"index"`
	// Count is how many shards the batch is split into; 0 means not
	// sharded.
	Count int `json:"count"`
}

// ErrBadShard is returned for a shard that is not "INDEX/COUNT" with
// 0 ≤ INDEX < COUNT.
var ErrBadShard = errors.New("want INDEX/COUNT with 0 ≤ INDEX < COUNT, as 0/4")

// ParseShard reads "INDEX/COUNT" (as "1/4"). An empty string is the zero
// Shard.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("%q: %w", s, ErrBadShard)
	}
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	sh := Shard{Index: idx, Count: cnt}
	if err1 != nil || err2 != nil || sh.Validate() != nil || cnt == 0 {
		return Shard{}, fmt.Errorf("%q: %w", s, ErrBadShard)
	}
	return sh, nil
}

// Validate reports a shard outside 0 ≤ Index < Count (the zero Shard is
// valid).
func (s Shard) Validate() error {
	if s == (Shard{}) {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d/%d: %w", s.Index, s.Count, ErrBadShard)
	}
	return nil
}

// Sharded reports whether s names a part of a batch.
func (s Shard) Sharded() bool { return s.Count > 0 }

// Owns reports whether work unit u is this shard's: u mod Count = Index.
// The zero Shard owns every unit.
func (s Shard) Owns(u int) bool { return s.Count == 0 || u%s.Count == s.Index }

// String returns "INDEX/COUNT".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Partial files. Every partial result opens with a PartialHeader; the
// rest is the stage's own (fit.Partial, rank.Partial). docs/shard.md
// describes the format.
const (
	// PartialFormat is the value of PartialHeader.Format.
	PartialFormat = "cascade-partial"
	// PartialVersion is the version of the partial format this build
	// writes and reads.
	PartialVersion = 1
)

// PartialHeader says what a partial result is a part of. Merging checks
// that the partials' headers agree: the same kind, inputs, config, unit
// count and shard count, every shard present exactly once.
type PartialHeader struct {
	// Format is PartialFormat; Version is PartialVersion.
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Kind is the stage that wrote it: "fit" or "rank".
	Kind string `json:"kind"`
	// Shard is which part this is.
	Shard Shard `json:"shard"`
	// InputsHash is the SHA-256 of the inputs the stage read (the model, and
	// for fit the observations), as "sha256:HEX".
	InputsHash string `json:"inputs_hash"`
	// ConfigHash is the SHA-256 of the configuration that shapes the result
	// (everything but the parallelism and the shard), as "sha256:HEX".
	ConfigHash string `json:"config_hash"`
	// Units is how many work units the whole batch has (over every
	// shard): grid points for fit, candidates for rank.
	Units int `json:"units"`
}

// Hash returns "sha256:HEX" of the concatenated parts, each preceded by
// its length, for PartialHeader's InputsHash and ConfigHash.
func Hash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ErrPartials is wrapped by every error of CheckPartials.
var ErrPartials = errors.New("partial results do not belong together")

// CheckPartials checks that the partial results with headers hs, read
// from files (one name per header, for the errors), make one whole: the
// format and version this build reads, one kind, the same inputs,
// config, unit count and shard count, and every shard 0 … Count−1 exactly
// once. It returns the headers' order by shard index.
func CheckPartials(hs []PartialHeader, files []string) ([]int, error) {
	if len(hs) == 0 {
		return nil, fmt.Errorf("%w: no partial result given", ErrPartials)
	}
	name := func(i int) string {
		if i < len(files) {
			return files[i]
		}
		return fmt.Sprintf("partial %d", i+1)
	}
	var errs []error
	for i, h := range hs {
		switch {
		case h.Format != PartialFormat:
			errs = append(errs, fmt.Errorf("%s: format %q, want %q (not a partial result)", name(i), h.Format, PartialFormat))
		case h.Version != PartialVersion:
			errs = append(errs, fmt.Errorf("%s: partial format version %d, this cascade reads version %d", name(i), h.Version, PartialVersion))
		case h.Shard.Count < 1 || h.Shard.Validate() != nil:
			errs = append(errs, fmt.Errorf("%s: shard %d/%d: %w", name(i), h.Shard.Index, h.Shard.Count, ErrBadShard))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrPartials, errors.Join(errs...))
	}
	first := hs[0]
	for i, h := range hs[1:] {
		i++
		differ := func(what, a, b string) {
			errs = append(errs, fmt.Errorf("%s: %s %s, but %s has %s", name(i), what, b, name(0), a))
		}
		if h.Kind != first.Kind {
			differ("kind", first.Kind, h.Kind)
		}
		if h.InputsHash != first.InputsHash {
			differ("inputs", first.InputsHash, h.InputsHash)
		}
		if h.ConfigHash != first.ConfigHash {
			differ("config", first.ConfigHash, h.ConfigHash)
		}
		if h.Shard.Count != first.Shard.Count {
			differ("shard count", strconv.Itoa(first.Shard.Count), strconv.Itoa(h.Shard.Count))
		}
		if h.Units != first.Units {
			differ("work units", strconv.Itoa(first.Units), strconv.Itoa(h.Units))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrPartials, errors.Join(errs...))
	}
	by := make([]int, first.Shard.Count)
	for i := range by {
		by[i] = -1
	}
	for i, h := range hs {
		if j := by[h.Shard.Index]; j >= 0 {
			errs = append(errs, fmt.Errorf("%s: shard %s is also %s", name(i), h.Shard, name(j)))
			continue
		}
		by[h.Shard.Index] = i
	}
	var missing []string
	for s, i := range by {
		if i < 0 {
			missing = append(missing, Shard{Index: s, Count: first.Shard.Count}.String())
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("shard %s missing: %d partials given, %d expected", strings.Join(missing, ", "), len(hs), first.Shard.Count))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrPartials, errors.Join(errs...))
	}
	return slices.Clip(by), nil
}

// DecodeStrict decodes one JSON document into v, rejecting unknown
// fields and trailing data, as partial results are read; an error says
// its byte offset.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = fmt.Errorf("byte %d: data after the document", dec.InputOffset())
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("byte %d: the document ends early (a file cut short?)", len(data))
	case errors.As(err, &se):
		return fmt.Errorf("byte %d: %w", se.Offset, err)
	case errors.As(err, &te):
		return fmt.Errorf("byte %d: %w", te.Offset, err)
	}
	return err
}

// PeekPartial reads the header of a partial result, whatever its kind,
// so that a caller can hand the file to its stage's decoder.
func PeekPartial(data []byte) (PartialHeader, error) {
	var h PartialHeader
	if err := json.Unmarshal(data, &h); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return h, fmt.Errorf("byte %d: %w", se.Offset, err)
		}
		return h, err
	}
	if h.Format != PartialFormat {
		return h, fmt.Errorf("format %q, want %q (not a partial result)", h.Format, PartialFormat)
	}
	return h, nil
}

// Check checks a decoded partial's header: the partial format, a version
// this build reads, and the kind of stage (kind) whose partial it must
// be (what names that stage in the error: "a fit's").
func (h PartialHeader) Check(kind, what string) error {
	if h.Format != PartialFormat {
		return fmt.Errorf("format %q, want %q (not a partial result)", h.Format, PartialFormat)
	}
	if h.Version != PartialVersion {
		return fmt.Errorf("partial format version %d, this cascade reads version %d", h.Version, PartialVersion)
	}
	if h.Kind != kind {
		return fmt.Errorf("a %s partial, not %s", h.Kind, what)
	}
	return nil
}
