package graph_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/internal/testutil"
)

var aggBench struct {
	once    sync.Once
	samples []cascade.Sample
}

// aggBenchFixture is the connectors' series for the HotROD capture at a
// 1 s flush (43,862 points in 475 series), read from a dataset into
// memory once per test binary.
func aggBenchFixture(b *testing.B) []cascade.Sample {
	aggBench.once.Do(func() {
		dir := connectorDataset(b, testutil.ConnectorConfig{})
		err := dataset.ReadSamples(dir, func(s *cascade.Sample) error {
			c := *s
			c.Service, c.Instance = strings.Clone(s.Service), strings.Clone(s.Instance)
			c.Metric, c.Labels = strings.Clone(s.Metric), strings.Clone(s.Labels)
			aggBench.samples = append(aggBench.samples, c)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	return aggBench.samples
}

// BenchmarkBuildAggregates measures connector points per second from
// memory to a model: the HotROD series as one collector exported them
// (hotrod), and as 20 collectors sharing the traces would (each series
// 20 times, one per collector instance, every count a twentieth: the
// same model from 20× the points).
func BenchmarkBuildAggregates(b *testing.B) {
	one := aggBenchFixture(b)
	const shards = 20
	many := make([]cascade.Sample, 0, shards*len(one))
	for i := range shards {
		for _, s := range one {
			s.Instance = fmt.Sprintf("collector-%02d:8889", i)
			s.Value /= shards
			many = append(many, s)
		}
	}
	for _, tc := range []struct {
		name    string
		samples []cascade.Sample
	}{{"hotrod", one}, {fmt.Sprintf("hotrod-%d-collectors", shards), many}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := graph.BuildAggregates(context.Background(), graph.DefaultConfig(), graph.Samples(tc.samples)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tc.samples))*float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	}
}
