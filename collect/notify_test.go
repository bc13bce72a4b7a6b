package collect

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"cascade"
	"cascade/dataset"
	"cascade/graph"
	"cascade/ingest"
)

// The notification chain of testdata/notify (seed 002 §5.3's shape on a
// real RabbitMQ) is recorded live by TestE2ENotify; a sample of each run,
// before and after the fix, is kept in testdata/notify-before and
// testdata/notify-after (see their README.md). These tests hold the kept
// captures to what the app measured, in the default test run.

// notifyMeasured is the JSON of figures the app writes (testdata/notify's
// Measured): the ground truth of a run.
type notifyMeasured struct {
	Mode               string                         `json:"mode"`
	Seed               uint64                         `json:"seed"`
	Rate               float64                        `json:"rate_per_s"`
	Burst              float64                        `json:"burst"`
	Duration           float64                        `json:"duration_s"`
	Tasks              []string                       `json:"tasks"`
	Events             int                            `json:"events"`
	Succeeded          int                            `json:"succeeded"`
	FlowSuccessRate    float64                        `json:"flow_success_rate"`
	Rejected           int                            `json:"rejected"`
	TaskFailed         int                            `json:"task_failed"`
	Unfinished         int                            `json:"unfinished"`
	FlowP50MS          float64                        `json:"flow_p50_ms"`
	FlowP95MS          float64                        `json:"flow_p95_ms"`
	FlowP99MS          float64                        `json:"flow_p99_ms"`
	MemoryAlarm        bool                           `json:"memory_alarm"`
	MemoryAlarmSeconds float64                        `json:"memory_alarm_s"`
	BrokerMemoryPeak   int64                          `json:"broker_memory_peak_bytes"`
	BrokerMemoryLimit  int64                          `json:"broker_memory_limit_bytes"`
	Queues             map[string]notifyQueueMeasured `json:"queues"`
	// Capture, in a kept capture only: how the traces were sampled.
	Capture *notifyCaptureInfo `json:"capture,omitempty"`
}

// notifyCaptureInfo says what a kept capture holds of its run: the whole
// flows of every SampleEvery-th event (app.event.id a multiple of it),
// against the run's full rates.
type notifyCaptureInfo struct {
	SampleEvery   int     `json:"sample_every"`     // kept: events whose id is a multiple of this
	SampleRatio   float64 `json:"sample_ratio"`     // 1 / SampleEvery
	EventsKept    int     `json:"events_kept"`      // events whose flow the capture holds
	SpansKept     int     `json:"spans_kept"`       // spans in traces.otlp.json.gz
	SpansTotal    int     `json:"spans_total"`      // spans the run exported
	EventRatePerS float64 `json:"event_rate_per_s"` // the run's events / its load's duration
	SpanRatePerS  float64 `json:"span_rate_per_s"`  // the run's spans / its load's duration
	LoadDurationS float64 `json:"load_duration_s"`
}

type notifyQueueMeasured struct {
	Published int   `json:"published"`
	OK        int   `json:"ok"`
	Retried   int   `json:"retried"`
	Failed    int   `json:"failed"`
	PeakReady int64 `json:"peak_ready"`
	DelayPeak int64 `json:"delay_peak_ready"`
}

// Files of a kept notify capture.
const (
	notifyTracesFile   = "traces.otlp.json.gz"
	notifyMeasuredFile = "measured.json"
	notifyPromDir      = "prometheus"
)

// notifyCapture is a kept run of the notification chain: the sampled
// traces as OTLP (every attribute and link as the SDK sent them), the
// same traces as cascade's span rows, the broker's Prometheus series as
// rows, and the app's measured figures.
type notifyCapture struct {
	Measured notifyMeasured
	Traces   ptrace.Traces
	Spans    []cascade.Span
	Samples  []cascade.Sample
}

// loadNotifyCapture reads a kept capture directory (testdata/notify-before
// or testdata/notify-after): the hook the prediction test of issue 26
// builds on (cascade analyze on before, the fix as a scenario, held to
// after's measured figures).
func loadNotifyCapture(t testing.TB, dir string) notifyCapture {
	t.Helper()
	var c notifyCapture
	b, err := os.ReadFile(filepath.Join(dir, notifyMeasuredFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &c.Measured), dir)
	c.Traces = readOTLPJSONGz(t, filepath.Join(dir, notifyTracesFile))

	cfg := ingest.DefaultConfig()
	cfg.Traces = []string{filepath.Join(dir, notifyTracesFile)}
	cfg.Metrics = []string{filepath.Join(dir, notifyPromDir)}
	cfg.Out = filepath.Join(t.TempDir(), "dataset")
	_, err = ingest.Run(t.Context(), cfg)
	require.NoError(t, err, dir)
	c.Spans = readDataset(t, cfg.Out)
	c.Samples = readDatasetSamples(t, cfg.Out)
	return c
}

// readDatasetSamples reads a dataset's metric samples.
func readDatasetSamples(t testing.TB, dir string) []cascade.Sample {
	t.Helper()
	var out []cascade.Sample
	require.NoError(t, dataset.ReadSamples(dir, func(s *cascade.Sample) error {
		x := *s
		x.Metric, x.Service, x.Labels = cloneString(x.Metric), cloneString(x.Service), cloneString(x.Labels)
		out = append(out, x)
		return nil
	}))
	return out
}

func cloneString(s string) string { return string([]byte(s)) }

// readOTLPJSONGz reads a gzipped OTLP JSON traces document.
func readOTLPJSONGz(t testing.TB, path string) ptrace.Traces {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err, path)
	b, err := io.ReadAll(zr)
	require.NoError(t, err, path)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err, path)
	return td
}

// notifyLinks summarises a capture's messaging spans: publish and process
// spans by queue, and the process spans whose link names a publish span
// of the capture.
type notifyLinks struct {
	publish, process map[string]int // by messaging.destination.name
	linked, unlinked int            // process spans
	services         []string
	retries          int // process spans of a redelivery (retry count > 0)
	deaths           int // process spans carrying x-death (the delay queue's route)
	errors           int // process spans with status error
}

func summariseNotify(td ptrace.Traces) notifyLinks {
	s := notifyLinks{publish: map[string]int{}, process: map[string]int{}}
	producers := map[[2]string]bool{}
	type proc struct{ trace, span string }
	var links []proc
	var processes int
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok && !slices.Contains(s.services, v.Str()) {
			s.services = append(s.services, v.Str())
		}
		for j := range rs.ScopeSpans().Len() {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				attrs := sp.Attributes()
				op, _ := attrs.Get("messaging.operation.type")
				dest, _ := attrs.Get("messaging.destination.name")
				switch {
				case sp.Kind() == ptrace.SpanKindProducer && op.Str() == "publish":
					s.publish[dest.Str()]++
					producers[[2]string{sp.TraceID().String(), sp.SpanID().String()}] = true
				case sp.Kind() == ptrace.SpanKindConsumer && op.Str() == "process":
					s.process[dest.Str()]++
					processes++
					if n, ok := attrs.Get("messaging.rabbitmq.message.delivery_count"); ok && n.Int() > 0 {
						s.retries++
					}
					if n, ok := attrs.Get("messaging.rabbitmq.message.x_death_count"); ok && n.Int() > 0 {
						s.deaths++
					}
					if sp.Status().Code() == ptrace.StatusCodeError {
						s.errors++
					}
					for l := range sp.Links().Len() {
						ln := sp.Links().At(l)
						links = append(links, proc{ln.TraceID().String(), ln.SpanID().String()})
					}
				}
			}
		}
	}
	for _, l := range links {
		if producers[[2]string{l.trace, l.span}] {
			s.linked++
		}
	}
	s.unlinked = processes - s.linked
	slices.Sort(s.services)
	return s
}

func TestNotifyCaptures(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		queues   []string
		services []string
		delay    bool // retries come back through the delay queue (x-death)
	}{
		{"before", "../testdata/notify-before",
			[]string{"log", "points", "push", "rights", "sms"},
			[]string{"gateway", "log", "points", "push", "rights", "sms"}, false},
		{"after", "../testdata/notify-after",
			[]string{"points", "rights", "sms"},
			[]string{"gateway", "points", "rights", "sms"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := loadNotifyCapture(t, tc.dir)
			m := c.Measured
			require.Equal(t, tc.name, m.Mode)
			require.Equal(t, tc.queues, sortedKeys(m.Queues), "measured queues")
			require.Positive(t, m.Events)
			require.Equal(t, m.Events, m.Succeeded+m.Rejected+m.TaskFailed+m.Unfinished, "every event is counted once")
			require.InDelta(t, float64(m.Succeeded)/float64(m.Events), m.FlowSuccessRate, 1e-9)

			s := summariseNotify(c.Traces)
			t.Logf("%s: %d events, success %.2f%%, p50 %.0f ms, p99 %.0f ms, alarm %v; capture: %d spans, publish %v, process %v, %d linked, %d unlinked, %d retries, %d via x-death, %d failed",
				tc.name, m.Events, 100*m.FlowSuccessRate, m.FlowP50MS, m.FlowP99MS, m.MemoryAlarm,
				len(c.Spans), s.publish, s.process, s.linked, s.unlinked, s.retries, s.deaths, s.errors)
			require.Equal(t, tc.services, s.services)
			for _, q := range tc.queues {
				require.Positive(t, s.publish[q], "publish spans to %s", q)
				require.Positive(t, s.process[q], "process spans of %s", q)
			}
			// The capture keeps whole flows: every process span's link
			// names a publish span the capture holds.
			require.Zero(t, s.unlinked, "process spans whose publish is not in the capture")
			// Before, the retry storm is in every sampled flow's reach;
			// after, a few tasks are retried in the whole run, so the
			// 1-in-10 sample may hold none of them.
			retried := 0
			for _, q := range m.Queues {
				retried += q.Retried
			}
			require.LessOrEqual(t, s.retries, retried, "redeliveries in the capture, at most the run's retries")
			if tc.delay {
				require.Equal(t, s.retries, s.deaths, "every retry comes back from the delay queue with x-death")
			} else {
				require.Positive(t, s.retries, "redeliveries recorded")
				require.Positive(t, s.errors, "failed processing recorded")
				require.Zero(t, s.deaths, "no dead-lettering before the fix")
			}

			// cascade's rows carry the messaging columns: each process
			// span its link, queue and earlier deliveries.
			var rows, linkedRows, redelivered int
			for _, sp := range c.Spans {
				if sp.MessagingOperation != cascade.MessagingProcess {
					continue
				}
				rows++
				require.Equal(t, "rabbitmq", sp.MessagingSystem)
				require.Contains(t, tc.queues, sp.Destination)
				if len(sp.Links) == 1 {
					linkedRows++
				}
				if sp.Redelivery > 0 {
					redelivered++
				}
			}
			require.Equal(t, s.linked+s.unlinked, rows, "process rows")
			require.Equal(t, rows, linkedRows, "every process row has its link")
			require.Equal(t, s.retries, redelivered, "process rows of a redelivery")

			// The broker's series agree with what the app measured: the
			// memory alarm, and each queue's peak of ready messages (the
			// app polls every 200 ms, Prometheus scrapes every second, so
			// the scraped peak is at most the polled one, give or take
			// the messages of one poll interval).
			var alarm float64
			peak := map[string]float64{}
			for _, x := range c.Samples {
				switch x.Metric {
				case "rabbitmq_alarms_memory_used_watermark":
					alarm = max(alarm, x.Value)
				case "rabbitmq_queue_messages_ready":
					for _, q := range tc.queues {
						if containsLabel(x.Labels, "queue", q) {
							peak[q] = max(peak[q], x.Value)
						}
					}
				}
			}
			require.Equal(t, m.MemoryAlarm, alarm == 1, "rabbitmq_alarms_memory_used_watermark reached 1 exactly when the app saw the alarm")
			for _, q := range tc.queues {
				require.Contains(t, peak, q, "rabbitmq_queue_messages_ready of %s", q)
				want := float64(m.Queues[q].PeakReady)
				require.LessOrEqual(t, peak[q], want+0.1*want+20, "%s: scraped peak %g, polled %g", q, peak[q], want)
				require.GreaterOrEqual(t, peak[q], 0.5*want-20, "%s: scraped peak %g, polled %g", q, peak[q], want)
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// containsLabel says whether a sample's labels (name="value" pairs, as
// the store writes them) hold name="value".
func containsLabel(labels, name, value string) bool {
	b, _ := json.Marshal(value)
	return strings.Contains(labels, name+"="+string(b))
}

// TestNotifyOneFlow holds graph to issue 26 on the real capture: every
// consumer trace, linked to its producer's publish, is part of the
// gateway's flow, so the gateway is the only entry and the root requests
// are the kept events, not the events plus every delivery; each task is
// a queue node between the gateway and its consumer, timed by its
// process span.
func TestNotifyOneFlow(t *testing.T) {
	for _, dir := range []string{"../testdata/notify-before", "../testdata/notify-after"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadNotifyCapture(t, dir)
			res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(c.Spans), graph.Samples(c.Samples))
			require.NoError(t, err)
			m := res.Model
			require.Len(t, m.Entries, 1)
			require.Equal(t, "gateway", m.Entries[0].Node)
			require.EqualValues(t, c.Measured.Capture.EventsKept, res.Stats.Roots, "one root request a kept event")
			for _, task := range c.Measured.Tasks {
				q := m.Node(graph.QueuePrefix + task)
				require.NotNil(t, q, "queue %s", task)
				require.NotNil(t, q.Queue)
				require.Equal(t, "rabbitmq", q.Queue.System)
			}
			for i := range m.Edges {
				e := &m.Edges[i]
				require.False(t, e.From == e.To, "a self edge %s", e.From)
				if strings.HasPrefix(e.To, graph.QueuePrefix) {
					require.NotEqual(t, strings.TrimPrefix(e.To, graph.QueuePrefix), e.From, "a consumer's retry is no publish into its own queue")
				}
			}
		})
	}
}

// TestNotifyFailBlocked holds graph to the blocked gateway of the real
// capture: before, while RabbitMQ's memory alarm was on, the gateway
// failed its requests at once (503, no publish); those failures are the
// broker's, so its own failure rate, the base, is what it failed outside
// the alarm (none), and each of its publishes fails while the broker
// blocks. After, without the alarm, nothing is marked.
func TestNotifyFailBlocked(t *testing.T) {
	tests := []struct {
		dir     string
		blocked bool
	}{
		{"../testdata/notify-before", true},
		{"../testdata/notify-after", false},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			c := loadNotifyCapture(t, tc.dir)
			res, err := graph.Build(context.Background(), graph.DefaultConfig(), graph.Spans(c.Spans), graph.Samples(c.Samples))
			require.NoError(t, err)
			gw := res.Model.Node("gateway")
			require.NotNil(t, gw)
			publishes := 0
			for i := range res.Model.Edges {
				e := &res.Model.Edges[i]
				if e.From != "gateway" || !strings.HasPrefix(e.To, graph.QueuePrefix) {
					continue
				}
				publishes++
				require.Equal(t, tc.blocked, e.FailBlocked, e.To)
				require.Equal(t, !tc.blocked, e.Async, e.To)
				require.Equal(t, 1.0, e.Propagation, e.To)
			}
			require.Equal(t, len(c.Measured.Tasks), publishes, "one publish edge a task")
			if !tc.blocked {
				require.Equal(t, gw.Observed.ErrorRate, gw.Overload.Base)
				return
			}
			require.Equal(t, 5, publishes)
			require.Greater(t, gw.Observed.ErrorRate, 0.15, "a fifth of the kept events failed")
			require.Less(t, gw.Overload.Base, 0.01, "the gateway's own failures, outside the alarm")
			require.Equal(t, cascade.Inferred, gw.Provenance["overload.base"])

			// The fit (fit/run.go's ownBase) leaves a base that is not the
			// node's whole error rate as it is.
			fm, err := notifyModel(t.Context(), "notify-before", c)
			require.NoError(t, err)
			require.Equal(t, gw.Overload.Base, fm.Node("gateway").Overload.Base)
			require.Equal(t, cascade.Inferred, fm.Node("gateway").Provenance["overload.base"])
		})
	}
}
