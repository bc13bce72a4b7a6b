// Command notify is a small activity-notification chain on RabbitMQ, the
// shape of seed 002 §5.3, written to be recorded by cascade's end-to-end
// test (collect/e2e_notify_test.go): a gateway receives events over HTTP
// and fans each out, through a direct exchange, to task queues whose
// consumers do the work; points depends on rights (it calls rights' HTTP
// API); rights gets slow under load (a small pool of database slots, a
// fixed query time: past its capacity the queries wait, and fail by the
// handler's deadline); a failed task is retried.
//
// It runs in one process, one OpenTelemetry tracer provider per service
// (gateway, rights, points, sms, push, log), exporting OTLP/HTTP to
// OTEL_EXPORTER_OTLP_ENDPOINT. It drives itself with an open-loop,
// seeded load and writes what it measured (flows, success, completion
// quantiles, peak queue depths, the memory alarm) to -out as JSON.
//
// Two modes: -mode before (fan-out 5, the log task on the synchronous
// path, retry by re-enqueueing up to 3 times, no cap) and -mode after
// (fan-out 3, the log written locally and asynchronously, push folded
// into sms, one retry through a delay queue, each queue capped at 10,000
// with drop-head). See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

// Config is set by the command line.
type Config struct {
	Mode       string        // before or after
	AMQP       string        // the broker's AMQP URL
	MetricsURL string        // the broker's Prometheus endpoint (rabbitmq_prometheus), polled for memory and alarms; empty: not polled
	Rate       float64       // events per second, open loop (Poisson arrivals)
	Burst      float64       // the rate's multiplier inside the burst window
	BurstAt    time.Duration // start of the burst, from the start of the load
	BurstFor   time.Duration // length of the burst
	Duration   time.Duration // length of the load
	Drain      time.Duration // longest wait after the load for the flows to settle
	Seed       uint64        // seeds the arrivals and the service times
	Body       int           // message body bytes
	Consumers  int           // consumers per queue
	Prefetch   int           // prefetch (unacked deliveries) per consumer; each is handled concurrently
	DBSlots    int           // rights' database slots
	DBQuery    time.Duration // rights' query time (fixed): capacity = DBSlots / DBQuery
	DBSlow     float64       // a query's time grows by this share per query waiting as it starts
	DBWaitCap  time.Duration // a query that waited this long for a slot is refused; 0 none
	Timeout    time.Duration // rights' and points' handler deadline
	Out        string        // measured figures, JSON
	LogFile    string        // after: where the gateway writes the log task locally
	Delay      time.Duration // after: how long a retry waits in the delay queue
	// Retries and RetryVia, when set, change the mode's retry policy
	// alone (a what-if run beside before: "requeue" or "delay", through a
	// delay queue of -retry-delay); Retries < 0 and RetryVia "" keep the
	// mode's.
	Retries  int
	RetryVia string
	// ImmediateRetries, with retries through the delay queue, re-enqueues
	// a task's first this many retries at once (one immediate retry,
	// then the delay queue: 1); it sets -retry-via delay.
	ImmediateRetries int
}

func main() {
	var c Config
	flag.StringVar(&c.Mode, "mode", "before", "before (seed 002 §5.3's settings) or after (the fix)")
	flag.StringVar(&c.AMQP, "amqp", "amqp://guest:guest@127.0.0.1:5672/", "the broker's AMQP URL")
	flag.StringVar(&c.MetricsURL, "metrics-url", "", "the broker's rabbitmq_prometheus endpoint, polled for memory and the alarm")
	flag.Float64Var(&c.Rate, "rate", 25, "events per second (open loop)")
	flag.Float64Var(&c.Burst, "burst", 1.6, "rate multiplier during the burst")
	flag.DurationVar(&c.BurstAt, "burst-at", 10*time.Second, "start of the burst")
	flag.DurationVar(&c.BurstFor, "burst-for", 10*time.Second, "length of the burst")
	flag.DurationVar(&c.Duration, "duration", 40*time.Second, "length of the load")
	flag.DurationVar(&c.Drain, "drain", 30*time.Second, "longest wait for the flows to settle after the load")
	flag.Uint64Var(&c.Seed, "seed", 1, "seed of the arrivals and service times")
	flag.IntVar(&c.Body, "body", 32768, "message body bytes")
	flag.IntVar(&c.Consumers, "consumers", 2, "consumers per queue")
	flag.IntVar(&c.Prefetch, "prefetch", 5, "prefetch per consumer")
	flag.IntVar(&c.DBSlots, "db-slots", 4, "rights' database slots")
	flag.DurationVar(&c.DBQuery, "db-query", 40*time.Millisecond, "rights' query time (fixed; capacity = slots / query time)")
	flag.Float64Var(&c.DBSlow, "db-slow", 0, "rights' query time grows by this share per query waiting for a slot as it starts (contention)")
	flag.DurationVar(&c.DBWaitCap, "db-wait-cap", 0, "a query that waited this long for a slot is refused at once (a pool's acquire timeout); 0 none")
	flag.DurationVar(&c.Timeout, "timeout", 120*time.Millisecond, "rights' and points' handler deadline")
	flag.StringVar(&c.Out, "out", "measured.json", "file of the measured figures")
	flag.StringVar(&c.LogFile, "log-file", os.DevNull, "after: the gateway's local log file")
	flag.DurationVar(&c.Delay, "retry-delay", 5*time.Second, "how long a retry waits in the delay queue (its TTL), where retries go through one")
	flag.IntVar(&c.Retries, "retries", -1, "retries of a failed task (-1: the mode's: 3 before, 1 after)")
	flag.IntVar(&c.ImmediateRetries, "immediate-retries", 0, "a task's first N retries re-enqueued at once, the later ones through the delay queue (sets -retry-via delay)")
	flag.StringVar(&c.RetryVia, "retry-via", "", "how a failed task is retried: requeue (at once) or delay (through the delay queue); empty: the mode's")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "notify:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c Config) error {
	s, err := modeSettings(c.Mode)
	if err != nil {
		return err
	}
	if err := s.override(c); err != nil {
		return err
	}
	tel, err := newTelemetry(ctx)
	if err != nil {
		return err
	}
	app, err := start(ctx, c, s, tel)
	if err != nil {
		return err
	}
	began := time.Now()
	load(ctx, c, app)
	fmt.Fprintf(os.Stderr, "notify: load done after %.1fs, %d events; draining\n", time.Since(began).Seconds(), app.flows.count())
	app.flows.settle(c.Drain)
	m := app.measure(c)
	fmt.Fprintf(os.Stderr, "notify: %s: %d events, success %.2f%%, p50 %.0f ms, p99 %.0f ms, alarm %v\n",
		c.Mode, m.Events, 100*m.FlowSuccessRate, m.FlowP50MS, m.FlowP99MS, m.MemoryAlarm)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.Out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := tel.shutdown(sctx); err != nil {
		return fmt.Errorf("flush spans: %w", err)
	}
	app.close()
	return nil
}

// settings are what a mode changes.
type settings struct {
	tasks      []string      // the queues an event fans out to
	syncLog    bool          // the gateway waits for the log task's publish confirm
	localLog   bool          // the gateway writes the log itself, asynchronously
	pushInSMS  bool          // the sms consumer sends the push notification too
	maxRetries int           // retries of a failed task
	delay      time.Duration // 0: a retry is re-enqueued at once; else it waits in a delay queue this long
	immediate  int           // with delay: the first this many retries re-enqueued at once
	maxLength  int           // 0: no cap; else x-max-length with x-overflow drop-head
}

// override applies the retry flags that change one setting of the mode.
func (s *settings) override(c Config) error {
	if c.Retries >= 0 {
		s.maxRetries = c.Retries
	}
	switch c.RetryVia {
	case "":
	case "requeue":
		s.delay = 0
	case "delay":
		s.delay = c.Delay
	default:
		return fmt.Errorf("-retry-via %q: want requeue or delay", c.RetryVia)
	}
	if c.ImmediateRetries > 0 {
		s.delay, s.immediate = c.Delay, c.ImmediateRetries
	}
	if s.delay > 0 {
		s.delay = c.Delay
	}
	return nil
}

func modeSettings(mode string) (settings, error) {
	switch mode {
	case "before":
		return settings{
			tasks:      []string{"rights", "points", "sms", "push", "log"},
			syncLog:    true,
			maxRetries: 3,
		}, nil
	case "after":
		return settings{
			tasks:      []string{"rights", "points", "sms"},
			localLog:   true,
			pushInSMS:  true,
			maxRetries: 1,
			delay:      5 * time.Second,
			maxLength:  10000,
		}, nil
	}
	return settings{}, fmt.Errorf("-mode %q: want before or after", mode)
}
