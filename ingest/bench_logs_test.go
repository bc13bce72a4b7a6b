package ingest

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/internal/drain"
)

// logTemplateSink templates what a log decoder produces, as the dataset
// writer does, and keeps nothing else.
type logTemplateSink struct {
	p               *drain.Parser
	nLogs, nInvalid int
}

func (s *logTemplateSink) log(r *cascade.LogRecord) error {
	s.p.Add(r.Body)
	s.nLogs++
	return nil
}
func (s *logTemplateSink) invalid(*ParseError) error  { s.nInvalid++; return nil }
func (s *logTemplateSink) infer(string)               {}
func (s *logTemplateSink) warnAt(string, *ParseError) {}

// BenchmarkDecodeLogCSV decodes and templates Nezha TrainTicket log lines:
// the 300-line slice in testdata, its rows repeated 20 times (6,000
// lines, 3.3 MB), each decoded (Docker wrapper, level, trace ids) and
// filed by the Drain parser.
func BenchmarkDecodeLogCSV(b *testing.B) {
	raw, err := os.ReadFile(nezhaLogs)
	require.NoError(b, err)
	nl := bytes.IndexByte(raw, '\n') + 1
	data := append([]byte{}, raw[:nl]...)
	for range 20 {
		data = append(data, raw[nl:]...)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		s := &logTemplateSink{p: drain.New(drain.DefaultConfig())}
		if err := decodeLogCSV("bench_log.csv", bytes.NewReader(data), s, &Options{}); err != nil || s.nInvalid > 0 {
			b.Fatal(err, s.nInvalid)
		}
		lines += s.nLogs
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}
