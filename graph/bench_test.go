//go:build unix

package graph_test

import (
	"context"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
)

// benchSpans is the size of the synthetic benchmark fixture.
const benchSpans = 1 << 20

var bench struct {
	once  sync.Once
	dir   string
	spans []cascade.Span
}

// benchFixture builds the synthetic fixture once per test binary: a
// million spans in memory and as a dataset.
func benchFixture(b *testing.B) (string, []cascade.Span) {
	bench.once.Do(func() {
		bench.spans = newSynth(1, 500).generate(benchSpans)
		dir, err := os.MkdirTemp("", "cascade-graph-bench-")
		require.NoError(b, err)
		writeDataset(b, dir, bench.spans)
		bench.dir = dir
	})
	return bench.dir, bench.spans
}

// BenchmarkBuild measures spans per second from a dataset to a model: the
// synthetic fixture read from Parquet (dataset), the same spans from
// memory (memory, the graph stage alone), and the HotROD capture.
func BenchmarkBuild(b *testing.B) {
	dir, spans := benchFixture(b)
	hotrod := hotrodDataset(b, "otlp")
	cases := []struct {
		name  string
		spans int
		src   cascade.SpanSource
	}{
		{"dataset", len(spans), readSpans(dir)},
		{"memory", len(spans), graph.Spans(spans)},
		{"hotrod", 11850, readSpans(hotrod)},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				_, err := graph.Build(context.Background(), graph.DefaultConfig(), tc.src, nil)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tc.spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(tc.spans)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "spans/cpu-s")
		})
	}
}

// BenchmarkReadSpans is the floor under BenchmarkBuild/dataset: reading
// the fixture's spans.parquet and doing nothing with the spans.
func BenchmarkReadSpans(b *testing.B) {
	dir, spans := benchFixture(b)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		require.NoError(b, dataset.ReadSpans(dir, func(*cascade.Span) error { return nil }))
	}
	b.ReportMetric(float64(len(spans))*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	b.ReportMetric(float64(len(spans))*float64(b.N)/(cpuTime()-cpu0).Seconds(), "spans/cpu-s")
}

// cpuTime returns the CPU time the process has used (user and system,
// all threads: the garbage collector's work counts), so that figures
// measured on a loaded machine stay comparable.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func readSpans(dir string) cascade.SpanSource {
	return func(fn func(*cascade.Span) error) error { return dataset.ReadSpans(dir, fn) }
}
