package replay

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"cascade"
)

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1

// cpuTime returns the user+system CPU time of the calling thread, which
// the benchmarks lock to their goroutine: the simulation's own CPU time,
// without the runtime's other threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSeed000Duration is the simulated time per benchmark op, and the
// --duration given to the SimPy script for the side-by-side ratio.
const benchSeed000Duration = 100 * time.Second

// BenchmarkSeed000 replays the seed-000 model (3 retries) at 0.05
// requests/ms for 100 s per op and reports simulated root requests per
// CPU-second. The rate is one where neither simulator collapses, so that
// a root request is one attempt on both sides; at 0.08/ms a run may or
// may not collapse (metastable), which changes the work per request. When SimPy and the reference
// script are at hand (CASCADE_SIMPY names the script; by default
// ../../shared/reference/simpy_retry_storm.py), it runs the script once
// with the same duration and reports SimPy's rate and the ratio.
func BenchmarkSeed000(b *testing.B) {
	m := loadModel(b, "seed000.json")
	cfg := DefaultConfig()
	cfg.Duration = benchSeed000Duration
	cfg.Tick = 10 * time.Microsecond
	cfg.Traffic = &cascade.Traffic{RatePerSec: 50}
	e, err := NewEngine(m, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var roots, calls, events int64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	c0 := cpuTime()
	seed := uint64(1)
	for b.Loop() {
		r := e.Run(seed)
		seed++
		roots += r.Counts.Roots
		calls += r.Counts.Calls
		events += r.Counts.Events
	}
	cpu := (cpuTime() - c0).Seconds()
	n := float64(b.N)
	ours := float64(roots) / cpu
	b.ReportMetric(ours, "requests/s")
	b.ReportMetric(float64(events)/n, "events/op")
	if simpy, ok := simpyRate(b); ok {
		b.ReportMetric(simpy, "simpy-requests/s")
		b.ReportMetric(ours/simpy, "ratio")
	}
}

// BenchmarkSeed000Collapsed replays the seed-000 model at 0.15
// requests/ms for 100 s per op, where both simulators collapse (the
// workers serve zombie attempts, almost every root exhausts its three
// retries), and reports attempts (root requests and their retries) per
// CPU-second of the simulating thread.
func BenchmarkSeed000Collapsed(b *testing.B) {
	m := loadModel(b, "seed000.json")
	cfg := DefaultConfig()
	cfg.Duration = benchSeed000Duration
	cfg.Tick = 10 * time.Microsecond
	cfg.Traffic = &cascade.Traffic{RatePerSec: 150}
	e, err := NewEngine(m, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var attempts, events int64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	c0 := cpuTime()
	seed := uint64(1)
	for b.Loop() {
		r := e.Run(seed)
		seed++
		attempts += r.Counts.Roots + r.Counts.Retries
		events += r.Counts.Events
	}
	cpu := (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(attempts)/cpu, "attempts/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// simpyRate runs the SimPy reference once and returns its submitted
// requests per CPU-second.
func simpyRate(b *testing.B) (float64, bool) {
	script := os.Getenv("CASCADE_SIMPY")
	if script == "" {
		script = filepath.Join("..", "..", "shared", "reference", "simpy_retry_storm.py")
	}
	if _, err := os.Stat(script); err != nil {
		return 0, false
	}
	out, err := exec.Command("/usr/bin/python3", script, "--rate", "0.05", "--max-retries", "3",
		"--duration", fmt.Sprint(benchSeed000Duration.Milliseconds()), "--seed", "1").Output()
	if err != nil {
		b.Logf("simpy: %v", err)
		return 0, false
	}
	var r struct {
		Submitted int64   `json:"submitted"`
		CPU       float64 `json:"cpu_s"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.CPU <= 0 {
		return 0, false
	}
	return float64(r.Submitted) / r.CPU, true
}

// fanout30 builds a 30-node layered graph (1, 3, 6, 10, 10 nodes): every
// node above the last layer calls two nodes of the next, one call in
// stage 0 and uniform(1, 3) calls (two at a time) in stage 1, so a root
// request makes about 121 calls. Services are exponential with mean
// 0.2 ms on 2 replicas × 16 slots.
func fanout30() *cascade.Model {
	layers := []int{1, 3, 6, 10, 10}
	m := &cascade.Model{Version: cascade.ModelVersion, Name: "fanout30"}
	var names [][]string
	k := 0
	for _, size := range layers {
		var ln []string
		for i := 0; i < size; i++ {
			name := fmt.Sprintf("n%02d", k)
			k++
			ln = append(ln, name)
			m.Nodes = append(m.Nodes, cascade.Node{Name: name, Replicas: 2, Concurrency: 16,
				Service: cascade.Dist{Kind: cascade.DistExp, Mean: 0.2}})
		}
		names = append(names, ln)
	}
	for l := 0; l+1 < len(names); l++ {
		next := names[l+1]
		for i, from := range names[l] {
			m.Edges = append(m.Edges,
				cascade.Edge{From: from, To: next[i%len(next)], FanOut: cascade.Const(1), Propagation: 1},
				cascade.Edge{From: from, To: next[(i+1)%len(next)], Stage: 1, Parallelism: 2, Propagation: 1,
					FanOut: cascade.Dist{Kind: cascade.DistUniform, Min: 0.5, Max: 3.5}})
		}
	}
	m.Entries = []cascade.Entry{{Node: "n00", RatePerSec: 1000, Share: 1}}
	m.Sort()
	return m
}

// BenchmarkFanout30 replays the generated 30-node fan-out graph for 10 s
// per op and reports call-hops (calls between nodes, root calls
// included) per CPU-second.
func BenchmarkFanout30(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Duration = 10 * time.Second
	cfg.Tick = 10 * time.Microsecond
	e, err := NewEngine(fanout30(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	var calls, events int64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	c0 := cpuTime()
	seed := uint64(1)
	for b.Loop() {
		r := e.Run(seed)
		seed++
		calls += r.Counts.Calls
		events += r.Counts.Events
	}
	cpu := (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(calls)/cpu, "call-hops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
}

// notify53 builds the activity-notification chain of seed 002 §5.3: a
// gateway publishes each event (confirmed) into five queues of one
// broker, each with four consumers of prefetch 10 in front of its task
// (eight for points, which waits for rights); the points task calls
// rights synchronously, as it needs rights' data.
// Tasks take exponential 5 ms (rights 8 ms) on 8 slots and fail 2% of
// the time; a failed message is requeued, at most 3 deliveries.
func notify53() *cascade.Model {
	m := &cascade.Model{Version: cascade.ModelVersion, Name: "notify53"}
	m.Nodes = append(m.Nodes, cascade.Node{Name: "gateway", Replicas: 2, Service: cascade.Const(0.5)})
	m.Brokers = []cascade.Broker{{Name: "mq", BaseBytes: 1e8, MemoryWatermarkBytes: 4e8}}
	for _, task := range []string{"rights", "points", "sms", "push", "log"} {
		q := task + "-q"
		svc, consumers := 5.0, 4
		switch task {
		case "rights":
			svc = 8
		case "points":
			consumers = 8
		}
		m.Nodes = append(m.Nodes,
			cascade.Node{Name: q, Replicas: 1, Service: cascade.Const(0), Queue: &cascade.Queue{
				System: "rabbitmq", Broker: "mq", Consumers: consumers, Prefetch: 10, MaxDeliveries: 3, MessageBytes: 2048}},
			cascade.Node{Name: task, Replicas: 1, Concurrency: 8, Service: cascade.Dist{Kind: cascade.DistExp, Mean: svc},
				Overload: cascade.Overload{Base: 0.02}})
		m.Edges = append(m.Edges,
			cascade.Edge{From: "gateway", To: q, FanOut: cascade.Const(1), Propagation: 1},
			cascade.Edge{From: q, To: task, FanOut: cascade.Const(1), Propagation: 1})
	}
	m.Edges = append(m.Edges, cascade.Edge{From: "points", To: "rights", FanOut: cascade.Const(1), Propagation: 1})
	m.Entries = []cascade.Entry{{Node: "gateway", RatePerSec: 400, Share: 1}}
	m.Sort()
	return m
}

// BenchmarkBroker replays the §5.3 notification chain (notify53) for
// 10 s per op and reports messages published per CPU-second.
func BenchmarkBroker(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Duration = 10 * time.Second
	cfg.Tick = 10 * time.Microsecond
	e, err := NewEngine(notify53(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	var msgs, events int64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	c0 := cpuTime()
	seed := uint64(1)
	for b.Loop() {
		r := e.Run(seed)
		seed++
		for i := range r.Nodes {
			if q := r.Nodes[i].Queue; q != nil {
				msgs += q.Published
			}
		}
		events += r.Counts.Events
	}
	cpu := (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(msgs)/cpu, "msgs/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

func loadModel(tb testing.TB, name string) *cascade.Model {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "replay", name))
	if err != nil {
		tb.Fatal(err)
	}
	m, err := cascade.DecodeModel(b)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkQueuePushPop measures one pop and one push of the event queue
// holding 100 events spread over 300 ticks.
func BenchmarkQueuePushPop(b *testing.B) {
	var q eventQueue
	q.reset()
	for i := 0; i < 100; i++ {
		q.push(int64(i*7%300), evJobDone, int32(i), 0)
	}
	for b.Loop() {
		ev, _ := q.pop()
		q.push(ev.at+int64(ev.id%300)+1, evJobDone, ev.id, 0)
	}
}

// BenchmarkStreamNorm measures a normal draw.
func BenchmarkStreamNorm(b *testing.B) {
	s := newStream(1, 2, 3)
	var x float64
	for b.Loop() {
		x += s.NormFloat64()
	}
	_ = x
}

// BenchmarkStreamExp measures an exponential draw.
func BenchmarkStreamExp(b *testing.B) {
	s := newStream(1, 2, 3)
	var x float64
	for b.Loop() {
		x += s.ExpFloat64()
	}
	_ = x
}

// BenchmarkLognormalDraw measures seed 000's service draw.
func BenchmarkLognormalDraw(b *testing.B) {
	s := newStream(1, 2, 3)
	d := compileDist(&cascade.Dist{Kind: cascade.DistLognormal, Mu: 3.5, Sigma: 0.4, Floor: 5})
	var x float64
	for b.Loop() {
		x += d.draw(s.Rand)
	}
	_ = x
}
