package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"

	"cascade"
)

// KindMap maps metric names to the kinds of the propagation model
// (cascade.MetricKind): which series is a queue depth, which a pool size,
// which a latency, and so on. It holds a list of overrides, read from a
// file by LoadKindMap, in front of built-in defaults for the common
// exporters (Micrometer, Tomcat, Jetty, HikariCP, Go and process
// collectors, Kafka, RabbitMQ, resilience4j, HTTP and gRPC server
// metrics, the OpenTelemetry semantic conventions, Envoy and Istio,
// HotROD and the Nezha CSV columns).
//
// A name is looked up as written and, when it ends in a Prometheus suffix,
// also without it: first without a type suffix (_total, _count, _sum,
// _bucket, _max), then also without a unit suffix (_seconds,
// _milliseconds). So hotrod_request_latency_bucket resolves through
// hotrod_request_latency, and process_cpu_seconds_total through
// process_cpu_seconds. When the kind comes from a stripped form and is
// latency, the _count series of that histogram or summary counts requests
// and resolves to requests.
//
// Overrides are tried first, in file order, each against the name and its
// stripped forms; the first override that matches decides. Then the
// defaults: exact default names (the name as written before its stripped
// forms), then default patterns in table order. A name nothing matches is
// cascade.MetricOther. The _count rule above applies unless an exact name
// (override or default) names the _count series itself.
//
// The zero value and a nil *KindMap hold no overrides and resolve names by
// the defaults alone. A KindMap is not changed after it is built and is
// safe for concurrent use.
type KindMap struct {
	overrides []kindRule
}

// kindRule is one PATTERN KIND line of an override file, or one default.
type kindRule struct {
	pattern string             // as written, for messages
	kind    cascade.MetricKind // the kind a matching name gets
	exact   bool               // pattern is a literal name
	re      *regexp.Regexp     // set for ~regex patterns (anchored)
}

// match reports whether name matches the rule.
func (r *kindRule) match(name string) bool {
	switch {
	case r.exact:
		return name == r.pattern
	case r.re != nil:
		return r.re.MatchString(name)
	}
	ok, err := path.Match(r.pattern, name)
	return ok && err == nil
}

// newKindRule parses a pattern: "~regex" is a regular expression that must
// match the whole name; a pattern holding any of * ? [ \ is a glob as
// path.Match reads it; anything else is an exact name.
func newKindRule(pattern string, kind cascade.MetricKind) (kindRule, error) {
	r := kindRule{pattern: pattern, kind: kind}
	switch {
	case strings.HasPrefix(pattern, "~"):
		expr := pattern[1:]
		if expr == "" {
			return r, errors.New("empty regular expression")
		}
		if _, err := regexp.Compile(expr); err != nil {
			return r, err // report the expression as written
		}
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return r, err
		}
		r.re = re
	case strings.ContainsAny(pattern, `*?[\`):
		if _, err := path.Match(pattern, ""); err != nil {
			return r, fmt.Errorf("glob %q: %w", pattern, err)
		}
	default:
		r.exact = true
	}
	return r, nil
}

// DefaultMetricKinds returns a KindMap with no overrides: names resolve
// by the built-in defaults alone. It is equivalent to a nil *KindMap.
func DefaultMetricKinds() *KindMap { return &KindMap{} }

// Kind returns the kind of a metric named as its source spells it
// (including any _bucket, _sum, _count or _total suffix). A nil receiver
// uses the defaults.
func (m *KindMap) Kind(metric string) cascade.MetricKind {
	var buf [3]string
	cands := kindCandidates(metric, buf[:0])
	if m != nil {
		for i := range m.overrides {
			r := &m.overrides[i]
			for j, c := range cands {
				if r.match(c) {
					return derivedKind(metric, r.kind, r.exact && j == 0)
				}
			}
		}
	}
	dk := defaultKinds()
	for j, c := range cands {
		if k, ok := dk.exact[c]; ok {
			return derivedKind(metric, k, j == 0)
		}
	}
	for i := range dk.patterns {
		r := &dk.patterns[i]
		for _, c := range cands {
			if r.match(c) {
				return derivedKind(metric, r.kind, false)
			}
		}
	}
	return cascade.MetricOther
}

// Prometheus name suffixes that Kind strips: first a type suffix, then a
// unit suffix.
var (
	kindTypeSuffixes = []string{"_total", "_count", "_sum", "_bucket", "_max"}
	kindUnitSuffixes = []string{"_seconds", "_milliseconds"}
)

// kindCandidates appends to dst the forms of name that Kind looks up, most
// specific first: the name, the name without its type suffix, and that
// without its unit suffix (each only when the suffix is there).
func kindCandidates(name string, dst []string) []string {
	dst = append(dst, name)
	s := name
	for _, suf := range kindTypeSuffixes {
		if len(s) > len(suf) && strings.HasSuffix(s, suf) {
			s = s[:len(s)-len(suf)]
			dst = append(dst, s)
			break
		}
	}
	for _, suf := range kindUnitSuffixes {
		if len(s) > len(suf) && strings.HasSuffix(s, suf) {
			dst = append(dst, s[:len(s)-len(suf)])
			break
		}
	}
	return dst
}

// derivedKind turns the latency kind of a histogram or summary into
// requests for its _count series: the number of observed durations is the
// number of requests. exact means an exact rule named the full metric
// name, whose kind then stands as it is.
func derivedKind(metric string, k cascade.MetricKind, exact bool) cascade.MetricKind {
	if !exact && k == cascade.MetricLatency && strings.HasSuffix(metric, "_count") {
		return cascade.MetricRequests
	}
	return k
}

// LoadKindMap reads an override file and returns a KindMap holding its
// rules in front of the defaults.
//
// The file holds one rule a line, PATTERN KIND, separated by white space.
// KIND is one of the kinds in cascade.MetricKinds (queue_depth,
// active_workers, pool_size, ...). PATTERN is an exact metric name, a glob
// (when it holds any of * ? [ \, matched as by path.Match), or a regular
// expression written ~regex that must match the whole name; a regular
// expression may contain spaces, as KIND is the last field. Blank lines
// and lines starting with # are ignored. For example:
//
//	# our worker pool
//	orders_worker_queue_size   queue_depth
//	orders_workers_busy        active_workers
//	jetty_threads_*            other
//	~.*_inflight(_requests)?   active_workers
//
// Errors name the file and line and unwrap to ErrSyntax or ErrBadValue;
// every defective line is reported.
func LoadKindMap(path string) (*KindMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read kind map: %w", err)
	}
	defer f.Close()
	return ParseKindMap(path, f)
}

// ParseKindMap reads override rules in the format LoadKindMap documents
// from r; name labels errors ("-" for stdin).
func ParseKindMap(name string, r io.Reader) (*KindMap, error) {
	m := &KindMap{}
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		rule, err := parseKindLine(text)
		if err != nil {
			errs = append(errs, &ParseError{File: name, Line: line, Err: err})
			continue
		}
		m.overrides = append(m.overrides, rule)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			errs = append(errs, &ParseError{File: name, Line: line + 1, Err: errorf(ErrSyntax, "line longer than 1 MiB")})
		} else {
			errs = append(errs, fmt.Errorf("read kind map %s: %w", name, err))
		}
	}
	switch len(errs) {
	case 0:
		return m, nil
	case 1:
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// parseKindLine parses one non-blank, non-comment rule line.
func parseKindLine(text string) (kindRule, error) {
	i := strings.LastIndexAny(text, " \t")
	if i < 0 {
		return kindRule{}, errorf(ErrSyntax, "want PATTERN KIND, got %q", text)
	}
	pattern := strings.TrimSpace(text[:i])
	kind := cascade.MetricKind(text[i+1:])
	if !knownMetricKind(kind) {
		return kindRule{}, errorf(ErrBadValue, "unknown kind %q (want one of %s)", kind, metricKindList())
	}
	rule, err := newKindRule(pattern, kind)
	if err != nil {
		return kindRule{}, errorf(ErrBadValue, "pattern %q: %v", pattern, err)
	}
	return rule, nil
}

// knownMetricKind reports whether k is one of cascade.MetricKinds.
func knownMetricKind(k cascade.MetricKind) bool {
	for _, x := range cascade.MetricKinds {
		if x == k {
			return true
		}
	}
	return false
}

// metricKindList lists the kinds for error messages.
func metricKindList() string {
	names := make([]string, len(cascade.MetricKinds))
	for i, k := range cascade.MetricKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// kindLookup memoizes KindMap.Kind for one decode: metric names repeat on
// every point, and a miss walks every pattern. It is not safe for
// concurrent use; each decode makes its own.
type kindLookup struct {
	m    *KindMap
	memo map[string]cascade.MetricKind
}

// kindLookupMax bounds the memo; past it the memo starts over.
const kindLookupMax = 1 << 14

// newKindLookup returns a memo over m (nil means the defaults).
func newKindLookup(m *KindMap) *kindLookup {
	return &kindLookup{m: m, memo: make(map[string]cascade.MetricKind)}
}

// kind returns m.Kind(metric), memoized.
func (l *kindLookup) kind(metric string) cascade.MetricKind {
	if k, ok := l.memo[metric]; ok {
		return k
	}
	k := l.m.Kind(metric)
	if len(l.memo) >= kindLookupMax {
		clear(l.memo)
	}
	l.memo[metric] = k
	return k
}

// defaultKinds holds the built-in defaults, split into exact names (a map)
// and patterns (tried in table order after every exact name). It is built
// on first use, not at start-up, which every command would pay.
var defaultKinds = sync.OnceValue(func() defaultKindSet { return buildDefaultKinds(defaultKindTable) })

// defaultKindSet is the compiled form of defaultKindTable.
type defaultKindSet struct {
	exact    map[string]cascade.MetricKind
	patterns []kindRule
}

// buildDefaultKinds compiles the default table. A bad pattern in the table
// is a programmer error and panics.
func buildDefaultKinds(table []kindDefault) defaultKindSet {
	set := defaultKindSet{exact: make(map[string]cascade.MetricKind, len(table))}
	for _, d := range table {
		r, err := newKindRule(d.pattern, d.kind)
		if err != nil {
			panic(fmt.Sprintf("ingest: default kind pattern %q: %v", d.pattern, err))
		}
		if r.exact {
			if _, dup := set.exact[d.pattern]; dup {
				panic(fmt.Sprintf("ingest: default kind %q listed twice", d.pattern))
			}
			set.exact[d.pattern] = d.kind
			continue
		}
		set.patterns = append(set.patterns, r)
	}
	return set
}

// kindDefault is one entry of the default table: a pattern in the syntax
// of an override file, and its kind.
type kindDefault struct {
	pattern string
	kind    cascade.MetricKind
}

// Shorter names for the table below.
const (
	kQueue    = cascade.MetricQueueDepth
	kActive   = cascade.MetricActiveWorkers
	kPool     = cascade.MetricPoolSize
	kRejected = cascade.MetricRejected
	kBreaker  = cascade.MetricBreakerOpen
	kCPU      = cascade.MetricCPU
	kMemory   = cascade.MetricMemory
	kLatency  = cascade.MetricLatency
	kRate     = cascade.MetricRequestRate
	kRequests = cascade.MetricRequests
	kErrRate  = cascade.MetricErrorRate
	kSuccess  = cascade.MetricSuccessRate
	kLag      = cascade.MetricConsumerLag
	kOther    = cascade.MetricOther

	kUnacked      = cascade.MetricQueueUnacked
	kConsumers    = cascade.MetricConsumers
	kPrefetch     = cascade.MetricPrefetch
	kPublished    = cascade.MetricPublished
	kRedelivered  = cascade.MetricRedelivered
	kDeadLettered = cascade.MetricDeadLettered
	kQueueBytes   = cascade.MetricQueueBytes
	kBrokerMem    = cascade.MetricBrokerMemory
	kMemLimit     = cascade.MetricMemoryLimit
	kMemAlarm     = cascade.MetricMemoryAlarm
)

// defaultKindTable is the built-in mapping, grouped by the exporter that
// emits each name. Names are given as the exporter writes them; Kind's
// suffix stripping covers their _bucket/_sum/_count/_total forms, and the
// _count of a latency histogram resolves to requests.
var defaultKindTable = []kindDefault{
	// Micrometer ExecutorServiceMetrics (Spring Boot, any
	// ThreadPoolExecutor bound to a MeterRegistry).
	{"executor_queued_tasks", kQueue},
	{"executor_active_threads", kActive},
	// The current pool size is the capacity that matters for a
	// ThreadPoolExecutor with an unbounded queue, which never grows past
	// its core size; the maximum bounds it otherwise.
	{"executor_pool_size_threads", kPool},
	{"executor_pool_max_threads", kPool},
	{"executor_pool_core_threads", kOther},
	// Free queue slots: the queue bound minus the depth, not a depth.
	{"executor_queue_remaining_tasks", kOther},
	{"executor_completed_tasks_total", kRequests},
	// Micrometer's TimedExecutorService: time a task ran, and time it
	// waited idle in the queue before running.
	{"executor_seconds", kLatency},
	{"executor_idle_seconds", kOther},

	// Tomcat thread pool (Micrometer TomcatMetrics).
	{"tomcat_threads_busy_threads", kActive},
	{"tomcat_threads_config_max_threads", kPool},
	// Tomcat's TaskQueue makes the pool grow to its maximum before
	// queueing, so the configured maximum, not the current size, is
	// its capacity.
	{"tomcat_threads_current_threads", kOther},
	{"tomcat_global_request_seconds", kLatency},
	{"tomcat_global_request_max_seconds", kLatency},

	// Jetty thread pool (Micrometer JettyServerThreadPoolMetrics).
	{"jetty_threads_busy", kActive},
	{"jetty_threads_config_max", kPool},
	// "The number of jobs in the queue waiting for a thread."
	{"jetty_threads_jobs", kQueue},
	{"jetty_threads_current", kOther},
	{"jetty_threads_idle", kOther},
	{"jetty_threads_config_min", kOther},
	// Jetty's own exporter (jetty_queued_thread_pool_*).
	{"jetty_queued_thread_pool_busy_threads", kActive},
	{"jetty_queued_thread_pool_max_threads", kPool},
	{"jetty_queued_thread_pool_queue_size", kQueue},

	// HikariCP connection pool (its Micrometer and Prometheus trackers).
	{"hikaricp_connections_active", kActive},
	{"hikaricp_connections_max", kPool},
	{"hikaricp_connections_pending", kQueue},
	// Threads that gave up waiting for a connection.
	{"hikaricp_connections_timeout_total", kRejected},

	// Go runtime collector (client_golang). Goroutines are not workers:
	// a Go server starts one per request and more for its own
	// housekeeping, and the count has no bound that would make it a
	// pool, so go_goroutines stays "other". GOMAXPROCS bounds how many
	// goroutines run on a CPU at once, not how many requests are in
	// flight (an I/O-bound server holds far more), so taking it as
	// pool_size would make the model saturate at a false capacity; it
	// stays "other" too.
	{"go_goroutines", kOther},
	{"go_threads", kOther},
	{"go_sched_gomaxprocs_threads", kOther},
	{"go_memstats_heap_inuse_bytes", kMemory},
	// Process collector (client_golang, Micrometer, the JMX exporter).
	{"process_cpu_seconds_total", kCPU},
	{"process_resident_memory_bytes", kMemory},
	{"process_cpu_usage", kCPU}, // Micrometer ProcessorMetrics, 0..1
	// cAdvisor / kubelet container metrics.
	{"container_cpu_usage_seconds_total", kCPU},
	{"container_memory_working_set_bytes", kMemory},
	// Micrometer JVM metrics.
	{"jvm_memory_used_bytes", kMemory},

	// Kafka consumer lag: kafka_exporter (kafka_consumergroup_lag and
	// its _sum by group), Micrometer KafkaClientMetrics
	// (kafka_consumer_fetch_manager_records_lag[_max]), the JMX
	// exporter's usual rules (kafka_consumer_records_lag[_max]), the
	// client's own JMX attribute (records-lag-max), and the OpenTelemetry
	// Collector's kafkametrics receiver (kafka.consumer_group.lag).
	{"kafka_consumergroup_lag", kLag},
	{"kafka_consumer_records_lag", kLag},
	{"kafka_consumer_records_lag_max", kLag},
	{"kafka_consumer_fetch_manager_records_lag", kLag},
	{"kafka_consumer_fetch_manager_records_lag_max", kLag},
	{"records-lag", kLag},
	{"records-lag-max", kLag},
	{"kafka.consumer_group.lag", kLag},
	{"kafka.consumer_group.lag_sum", kLag},

	// RabbitMQ's Prometheus plugin (rabbitmq_prometheus, as in 3.10):
	// the aggregated /metrics families, the same families per object on
	// /metrics/per-object, and the rabbitmq_detailed_ ones of
	// /metrics/detailed. A queue's series carry queue="..." (and vhost).
	// The depth is the ready messages; rabbitmq_queue_messages is ready
	// plus unacked, both of which have their own kind, so it stays
	// "other" rather than be counted twice.
	{"rabbitmq_queue_messages_ready", kQueue},
	{"rabbitmq_queue_messages_unacked", kUnacked},
	{"rabbitmq_queue_messages", kOther},
	{"rabbitmq_queue_consumers", kConsumers},
	{"rabbitmq_queue_messages_bytes", kQueueBytes},
	{"rabbitmq_queue_messages_published_total", kPublished},
	{"rabbitmq_detailed_queue_messages_ready", kQueue},
	{"rabbitmq_detailed_queue_messages_unacked", kUnacked},
	{"rabbitmq_detailed_queue_messages", kOther},
	{"rabbitmq_detailed_queue_consumers", kConsumers},
	{"rabbitmq_detailed_queue_messages_bytes", kQueueBytes},
	{"rabbitmq_detailed_queue_messages_published_total", kPublished},
	// Consumers per channel, and all of a node's: the aggregated /metrics
	// sums the per-channel and per-queue series into one without labels
	// (as it sums the channels' prefetch), which graph divides by.
	{"rabbitmq_channel_consumers", kConsumers},
	{"rabbitmq_detailed_channel_consumers", kConsumers},
	{"rabbitmq_consumers", kConsumers},
	// Publishes into exchanges, per channel and node-wide, and
	// redeliveries.
	{"rabbitmq_channel_messages_published_total", kPublished},
	{"rabbitmq_detailed_channel_messages_published_total", kPublished},
	{"rabbitmq_global_messages_received_total", kPublished},
	{"rabbitmq_channel_messages_redelivered_total", kRedelivered},
	{"rabbitmq_detailed_channel_messages_redelivered_total", kRedelivered},
	{"rabbitmq_global_messages_redelivered_total", kRedelivered},
	// Dead-lettered, by cause: maxlen (overflow drop-head or
	// reject-publish-dlx), expired, rejected, delivery_limit; and
	// confirmed (at-least-once dead-lettering of quorum queues).
	{"rabbitmq_global_messages_dead_lettered_*_total", kDeadLettered},
	// Prefetch: per consumer (basic.qos global=false) and shared by a
	// channel (global=true).
	{"rabbitmq_consumer_prefetch", kPrefetch},
	{"rabbitmq_channel_prefetch", kPrefetch},
	{"rabbitmq_detailed_consumer_prefetch", kPrefetch},
	{"rabbitmq_detailed_channel_prefetch", kPrefetch},
	// The broker's memory against its high watermark, and the alarm
	// that blocks publishers past it.
	{"rabbitmq_process_resident_memory_bytes", kBrokerMem},
	{"rabbitmq_detailed_process_resident_memory_bytes", kBrokerMem},
	{"rabbitmq_resident_memory_limit_bytes", kMemLimit},
	{"rabbitmq_detailed_resident_memory_limit_bytes", kMemLimit},
	{"rabbitmq_alarms_memory_used_watermark", kMemAlarm},

	// NATS JetStream (prometheus-nats-exporter's jetstream metrics):
	// a consumer's pending messages are its queue, its ack-pending ones
	// delivered but not acknowledged, its redelivered count a counter.
	{"jetstream_consumer_num_pending", kQueue},
	{"jetstream_consumer_num_ack_pending", kUnacked},
	{"jetstream_consumer_num_redelivered", kRedelivered},

	// resilience4j (resilience4j-micrometer). The breaker state gauge has
	// one series per state with value 1 for the current one: the series
	// with state="open" (and "forced_open") says the breaker is open.
	{"resilience4j_circuitbreaker_state", kBreaker},
	{"resilience4j_circuitbreaker_not_permitted_calls_total", kRejected},
	{"resilience4j_circuitbreaker_failure_rate", kErrRate},
	{"resilience4j_circuitbreaker_calls_seconds", kLatency},
	// Free bulkhead slots: the maximum minus the calls in flight; a
	// capacity that shrinks under load would mislead the model.
	{"resilience4j_bulkhead_available_concurrent_calls", kOther},
	{"resilience4j_bulkhead_max_allowed_concurrent_calls", kPool},
	{"resilience4j_thread_pool_bulkhead_queue_depth", kQueue},
	{"resilience4j_thread_pool_bulkhead_queue_capacity", kOther},
	{"resilience4j_thread_pool_bulkhead_thread_pool_size", kPool},
	{"resilience4j_thread_pool_bulkhead_max_thread_pool_size", kPool},
	{"resilience4j_thread_pool_bulkhead_active_thread_count", kActive},
	// Threads waiting for a rate limiter permission form its queue; the
	// remaining permissions are a budget, not a depth.
	{"resilience4j_ratelimiter_waiting_threads", kQueue},
	{"resilience4j_ratelimiter_available_permissions", kOther},

	// HTTP servers. Micrometer's http.server.requests timer: _count is
	// the request count, the timer itself (_sum, _bucket, _max) latency;
	// its long-task timer counts requests in flight.
	{"http_server_requests_seconds_count", kRequests},
	{"http_server_requests_seconds", kLatency},
	{"http_server_requests_active_seconds_active_count", kActive},
	// OpenTelemetry's Prometheus exporter, older (http.server.duration,
	// milliseconds) and current (http.server.request.duration) semantic
	// conventions; _count is the request count.
	{"http_server_duration", kLatency},
	{"http_server_request_duration", kLatency},
	{"http_server_active_requests", kActive},
	// client_golang conventions (promhttp, most Go services).
	{"http_requests_total", kRequests},
	{"http_request_duration_seconds", kLatency},
	{"http_requests_in_flight", kActive},
	// gRPC (go-grpc-prometheus, grpc-ecosystem/go-grpc-middleware):
	// handled calls are the requests; started minus handled would be
	// in flight, so started alone is not counted again.
	{"grpc_server_handled_total", kRequests},
	{"grpc_server_started_total", kOther},
	{"grpc_server_handling_seconds", kLatency},

	// OpenTelemetry semantic conventions, as OTLP spells the names.
	{"http.server.request.duration", kLatency},
	{"http.server.duration", kLatency},
	{"http.server.active_requests", kActive},
	{"http.client.request.duration", kLatency},
	{"rpc.server.duration", kLatency},
	{"rpc.client.duration", kLatency},
	{"messaging.process.duration", kLatency},
	{"messaging.client.operation.duration", kLatency},
	{"messaging.client.consumed.messages", kRequests},
	{"messaging.client.sent.messages", kRequests},
	{"db.client.connection.max", kPool},
	{"db.client.connection.pending_requests", kQueue},
	{"db.client.connection.wait_time", kOther},
	{"process.cpu.time", kCPU},
	{"process.cpu.utilization", kCPU},
	{"process.memory.usage", kMemory},
	{"jvm.cpu.time", kCPU},
	{"jvm.memory.used", kMemory},
	{"go.memory.used", kMemory},
	{"go.goroutine.count", kOther}, // see go_goroutines above

	// Envoy and Istio. Pending requests wait for an upstream connection
	// (Envoy's per-cluster queue); overflow is what the pending-request
	// circuit breaker turned away.
	{"envoy_cluster_upstream_rq_pending_active", kQueue},
	{"envoy_cluster_upstream_rq_pending_overflow", kRejected},
	{"envoy_cluster_upstream_rq_active", kActive},
	{"envoy_cluster_upstream_rq_total", kRequests},
	{"envoy_cluster_upstream_rq_time", kLatency},
	{"envoy_cluster_circuit_breakers_default_rq_open", kBreaker},
	{"envoy_cluster_circuit_breakers_default_rq_pending_open", kBreaker},
	{"istio_requests_total", kRequests},
	{"istio_request_duration_milliseconds", kLatency},

	// HotROD (Jaeger's example; see testdata/hotrod-baseline). Its
	// scrape has request counters and a latency histogram per
	// endpoint; it exports no worker-pool or queue metric.
	{"hotrod_requests_total", kRequests},
	{"hotrod_http_requests_total", kRequests},
	{"hotrod_request_latency", kLatency},

	// Nezha's per-pod and per-service CSV columns (testdata/nezha-*).
	// Node-wide columns (Node*) describe the machine, not the service,
	// and stay "other".
	{"CpuUsage(m)", kCPU},
	{"CpuUsageRate(%)", kCPU},
	{"MemoryUsage(Mi)", kMemory},
	{"MemoryUsageRate(%)", kMemory},
	{"PodWorkload(Ops)", kRate},
	{"SuccessRate(%)", kSuccess},
	{"PodSuccessRate(%)", kSuccess},
	{"Pod*Latency*(s)", kLatency},
	{"Latency*(s)", kLatency},

	// Catch-alls, after every name above. Runtime families stay "other"
	// so that the heuristics below do not take GC pauses or scheduler
	// delays for request latency.
	{"go_*", kOther},
	{"go.*", kOther},
	{"process_*", kOther},
	{"jvm_*", kOther},
	{"jvm.*", kOther},
	{"Node*", kOther},
	// Heuristics for names no exporter above emits, including the file
	// names that stand in for unnamed Prometheus API results
	// (mean_latency_by_endpoint.json, request_rate_by_endpoint.json).
	{`~(?i).*latency.*`, kLatency},
	{`~(?i).*[_.]duration`, kLatency},
	{`~(?i).*request_?rate.*|.*_rps`, kRate},
	{`~(?i).*error_?rate.*`, kErrRate},
	{`~(?i).*success_?rate.*`, kSuccess},
	{`~.*_requests`, kRequests},
	{`~.*consumer.*lag.*`, kLag},
}
