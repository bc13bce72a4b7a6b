package main

import (
	"math"
	"os"
	"slices"
	"sync"
	"time"
)

// flows tracks each event's tasks: a flow succeeds when the gateway
// answered 200 and every task was processed ok; its completion time is
// the last task's ack minus the event's start at the gateway.
type flows struct {
	tasks []string
	index map[string]int
	mu    struct {
		sync.Mutex
		byID map[int64]*flow
	}
}

type flow struct {
	start    time.Time
	answered bool
	ok       bool // the gateway answered 200
	done     uint32
	failed   uint32
	last     time.Time
}

func newFlows(tasks []string) *flows {
	f := &flows{tasks: tasks, index: map[string]int{}}
	for i, t := range tasks {
		f.index[t] = i
	}
	f.mu.byID = map[int64]*flow{}
	return f
}

func (f *flows) getLocked(id int64) *flow {
	fl := f.mu.byID[id]
	if fl == nil {
		fl = &flow{}
		f.mu.byID[id] = fl
	}
	return fl
}

func (f *flows) begin(id int64, t time.Time) {
	f.mu.Lock()
	f.getLocked(id).start = t
	f.mu.Unlock()
}

func (f *flows) answer(id int64, ok bool) {
	f.mu.Lock()
	fl := f.getLocked(id)
	fl.answered, fl.ok = true, ok
	f.mu.Unlock()
}

// finish records a task's end: processed ok, or failed for good.
func (f *flows) finish(id int64, task string, ok bool, t time.Time) {
	i, known := f.index[task]
	if !known {
		return
	}
	f.mu.Lock()
	fl := f.getLocked(id)
	if ok {
		fl.done |= 1 << i
	} else {
		fl.failed |= 1 << i
	}
	if t.After(fl.last) {
		fl.last = t
	}
	f.mu.Unlock()
}

func (f *flows) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.byID)
}

// settled says whether a flow's outcome is known.
func (f *flows) settled(fl *flow) bool {
	all := uint32(1)<<len(f.tasks) - 1
	return fl.answered && (!fl.ok || fl.failed != 0 || fl.done == all)
}

// settle waits until every flow is settled or max passes.
func (f *flows) settle(max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		open := 0
		for _, fl := range f.mu.byID {
			if !f.settled(fl) {
				open++
			}
		}
		f.mu.Unlock()
		if open == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Measured is the figures a run writes: the ground truth a prediction is
// held to.
type Measured struct {
	Mode     string   `json:"mode"`
	Seed     uint64   `json:"seed"`
	Rate     float64  `json:"rate_per_s"`
	Burst    float64  `json:"burst"`
	Duration float64  `json:"duration_s"`
	Tasks    []string `json:"tasks"`
	// Args are the program's flags as given, the run's settings.
	Args []string `json:"args,omitempty"`
	// Events is the events the gateway received.
	Events int `json:"events"`
	// Succeeded: answered 200 and every task processed ok.
	Succeeded       int     `json:"succeeded"`
	FlowSuccessRate float64 `json:"flow_success_rate"`
	// Rejected: the gateway answered 503 (a publish failed or was not
	// confirmed in time).
	Rejected int `json:"rejected"`
	// TaskFailed: some task failed for good (retries spent).
	TaskFailed int `json:"task_failed"`
	// Unfinished: some task never ended within the drain (dropped by the
	// cap, or still queued).
	Unfinished int `json:"unfinished"`
	// Completion of the successful flows (last task's ack minus the
	// event's start), milliseconds.
	FlowP50MS float64 `json:"flow_p50_ms"`
	FlowP95MS float64 `json:"flow_p95_ms"`
	FlowP99MS float64 `json:"flow_p99_ms"`
	// MemoryAlarm: the broker blocked a publishing connection (its memory
	// alarm), or its rabbitmq_alarms_memory_used_watermark read 1.
	MemoryAlarm        bool    `json:"memory_alarm"`
	MemoryAlarmSeconds float64 `json:"memory_alarm_s"`
	BrokerMemoryPeak   int64   `json:"broker_memory_peak_bytes"`
	BrokerMemoryLimit  int64   `json:"broker_memory_limit_bytes"`
	// Queues: per task queue, the app's counts and the broker's peak of
	// ready messages (polled every 200 ms).
	Queues map[string]QueueMeasured `json:"queues"`
}

// QueueMeasured is one queue's figures.
type QueueMeasured struct {
	Published int   `json:"published"` // first publishes and retries, confirmed or written
	OK        int   `json:"ok"`
	Retried   int   `json:"retried"`
	Failed    int   `json:"failed"`
	PeakReady int64 `json:"peak_ready"`
	DelayPeak int64 `json:"delay_peak_ready,omitempty"`
}

func (a *app) measure(c Config) Measured {
	m := Measured{Mode: c.Mode, Seed: c.Seed, Args: os.Args[1:], Rate: c.Rate, Burst: c.Burst, Duration: c.Duration.Seconds(),
		Tasks: a.set.tasks, Queues: map[string]QueueMeasured{}}
	all := uint32(1)<<len(a.set.tasks) - 1
	var done []float64
	a.flows.mu.Lock()
	for _, fl := range a.flows.mu.byID {
		m.Events++
		switch {
		case !fl.answered || !fl.ok:
			m.Rejected++
		case fl.failed != 0:
			m.TaskFailed++
		case fl.done != all:
			m.Unfinished++
		default:
			m.Succeeded++
			done = append(done, float64(fl.last.Sub(fl.start))/float64(time.Millisecond))
		}
	}
	a.flows.mu.Unlock()
	if m.Events > 0 {
		m.FlowSuccessRate = float64(m.Succeeded) / float64(m.Events)
	}
	slices.Sort(done)
	m.FlowP50MS, m.FlowP95MS, m.FlowP99MS = quantile(done, 0.5), quantile(done, 0.95), quantile(done, 0.99)
	b := a.broker.snapshot()
	m.MemoryAlarm = b.alarm || a.pub.alarmed.Load() || a.retry.alarmed.Load()
	m.MemoryAlarmSeconds = b.alarmFor.Seconds()
	m.BrokerMemoryPeak, m.BrokerMemoryLimit = b.memPeak, b.memLimit
	for _, q := range a.set.tasks {
		s := a.stats.get(q)
		s.PeakReady = b.peak[q]
		s.DelayPeak = b.peak[q+".delay"]
		m.Queues[q] = s
	}
	return m
}

// quantile is the nearest-rank quantile of sorted xs, rounded to 0.1.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return math.Round(10*xs[max(i, 0)]) / 10
}

// queueStats counts each queue's publishes and outcomes.
type queueStats struct {
	mu sync.Mutex
	m  map[string]*QueueMeasured
}

func newQueueStats(tasks []string) *queueStats {
	s := &queueStats{m: map[string]*QueueMeasured{}}
	for _, t := range tasks {
		s.m[t] = &QueueMeasured{}
	}
	return s
}

func (s *queueStats) add(q string, f func(*QueueMeasured)) {
	s.mu.Lock()
	if m := s.m[q]; m != nil {
		f(m)
	}
	s.mu.Unlock()
}

func (s *queueStats) published(q string) { s.add(q, func(m *QueueMeasured) { m.Published++ }) }
func (s *queueStats) ok(q string)        { s.add(q, func(m *QueueMeasured) { m.OK++ }) }
func (s *queueStats) retried(q string)   { s.add(q, func(m *QueueMeasured) { m.Retried++ }) }
func (s *queueStats) failed(q string)    { s.add(q, func(m *QueueMeasured) { m.Failed++ }) }

func (s *queueStats) get(q string) QueueMeasured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.m[q]
}
