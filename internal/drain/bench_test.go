package drain

import (
	"fmt"
	"testing"
)

// BenchmarkParserAdd files 10,000 generated messages of 40 statements,
// each with variable ids and numbers, into a fresh parser per loop.
func BenchmarkParserAdd(b *testing.B) {
	msgs := make([]string, 10000)
	for i := range msgs {
		msgs[i] = fmt.Sprintf("c.e.Service%d#%d [op%d][step %d] order %x took %dms for user u%d",
			i%40, 100+i%40, i%40, i%7, i*7919, i%250, i%97)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		p := New(DefaultConfig())
		for _, m := range msgs {
			p.Add(m)
		}
		n += len(msgs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}
