package ingest

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"cascade"

	"github.com/stretchr/testify/require"
)

// collectSink keeps everything a decoder produces, for tests.
type collectSink struct {
	spans   []cascade.Span
	samples []cascade.Sample
	errs    []*ParseError
	notes   map[string]int
	warns   map[string]int
	// failFast makes invalid stop the decoder at the first bad record.
	failFast bool
}

func newCollectSink() *collectSink {
	return &collectSink{notes: map[string]int{}, warns: map[string]int{}}
}

// span repairs s as the real sinks do (checkSpan) and keeps it.
func (c *collectSink) span(s *cascade.Span) error {
	checkSpan(s, c.warn)
	c.spans = append(c.spans, *s)
	return nil
}

func (c *collectSink) sample(s *cascade.Sample) error    { c.samples = append(c.samples, *s); return nil }
func (c *collectSink) infer(note string)                 { c.notes[note]++ }
func (c *collectSink) warn(kind string)                  { c.warns[kind]++ }
func (c *collectSink) warnAt(kind string, _ *ParseError) { c.warns[kind]++ }
func (c *collectSink) invalid(err *ParseError) error {
	c.errs = append(c.errs, err)
	if c.failFast {
		return err
	}
	return nil
}

// repoTestdata returns the path of a file under the repository's testdata.
func repoTestdata(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata"}, parts...)...)
}

// decodeTestFile runs one decoder over a file (gzip and zstd are
// decompressed first) into a fresh collectSink.
func decodeTestFile(t testing.TB, dec decodeFunc, path string, opts *Options) (*collectSink, error) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, name, done, err := decompressed(path, f)
	require.NoError(t, err)
	defer done()
	if opts == nil {
		opts = &Options{}
	}
	s := newCollectSink()
	return s, dec(filepath.Base(name), r, s, opts)
}

// decodeTestBytes runs one decoder over bytes.
func decodeTestBytes(dec decodeFunc, name string, r io.Reader, opts *Options) (*collectSink, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := newCollectSink()
	return s, dec(name, r, s, opts)
}
