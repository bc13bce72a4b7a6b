//go:build unix

package ingest

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
)

// BenchmarkReadSpans reads the HotROD spans tiled to ≥ 1M spans
// (tiledDataset) and does nothing with them: rows reads them with
// dataset.ReadSpans, generic with parquet-go's GenericReader (how dataset.ReadSpans read
// them before), which allocates every row's strings.
func BenchmarkReadSpans(b *testing.B) {
	dir := tiledDataset(b)
	path := filepath.Join(dir, dataset.SpansFile)
	total := 0
	require.NoError(b, readGeneric(path, func(*cascade.Span) error { total++; return nil }))
	require.GreaterOrEqual(b, total, tiledSpans)
	for _, tc := range []struct {
		name string
		read func(fn func(*cascade.Span) error) error
	}{
		{"rows", func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }},
		{"generic", func(fn func(*cascade.Span) error) error { return readGeneric(path, fn) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				n := 0
				if err := tc.read(func(*cascade.Span) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != total {
					b.Fatalf("read %d spans, want %d", n, total)
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(total)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "spans/cpu-s")
		})
	}
}

// cpuTime returns the CPU time the process has used (user and system, all
// threads, so the garbage collector's work counts), which keeps figures
// taken on a loaded machine comparable.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
