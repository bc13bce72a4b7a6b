package collect

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"cascade/ingest"
)

// Config is what a user sets for one cascade collect run. A run does one of
// three things, then folds what it recorded into the dataset: it receives
// OTLP/HTTP (the default), pulls from Prometheus and Jaeger (when
// Pull.Prometheus or Pull.Jaeger is set), or only folds what an earlier run
// left (Finalize).
type Config struct {
	// Out is the dataset directory. Required. A dataset already there is
	// kept and added to: its rows come first, so they win over repeats.
	Out string
	// Work is the work directory holding the segments; empty (the
	// default) means Out + ".collect", beside the dataset.
	Work string
	// Finalize, when true, receives and pulls nothing: it folds the
	// segments an earlier (crashed or interrupted) run left in Work into
	// the dataset. Default false.
	Finalize bool
	// Receiver configures the OTLP/HTTP endpoint.
	Receiver ReceiverConfig
	// Pull configures reading from Prometheus and Jaeger.
	Pull PullConfig
	// RunRows is as ingest.Config.RunRows: rows sorted in memory before a
	// sorted run is spilled while the dataset is written; zero means
	// ingest's default (262144).
	RunRows int
	// Options are passed to the decoders (a metric-kind mapping); the
	// zero value means ingest's defaults.
	Options ingest.Options
	// Log receives one line per event worth telling an operator
	// (listening, resuming, discarded tails, the final counts); nil means
	// none.
	Log io.Writer
}

// ReceiverConfig configures the OTLP/HTTP endpoint.
type ReceiverConfig struct {
	// Listen is the TCP address to listen on; default "127.0.0.1:4318"
	// (loopback, OTLP/HTTP's port). Empty means the default.
	Listen string
	// QueueSize is how many requests are admitted at once, counting those
	// being read, decoded, waiting for the disk and being written; the
	// next one is answered 429 with Retry-After. Default 64; zero means
	// the default.
	QueueSize int
	// QueueBytes bounds the (decompressed) body bytes that the admitted
	// requests hold at once; a request whose body would pass it is
	// answered 429 with Retry-After. A request holds about 5 times its
	// body at its peak (body, decoded rows, their encoding), so memory is
	// bounded by about 5 × QueueBytes. Default 64 MiB; zero means the
	// default. It must be at least MaxRequestBytes.
	QueueBytes int64
	// MaxRequestBytes caps a request body, both as sent and decompressed;
	// a larger one is answered 413. Default 16 MiB; zero means the default.
	MaxRequestBytes int64
	// RetryAfter is what a 429 or 503 answer asks the client to wait
	// (whole seconds, at least 1). Default 1s; zero means the default.
	RetryAfter time.Duration
	// SegmentBytes is the size after which a segment is closed and the
	// next one started. Default 64 MiB; zero means the default.
	SegmentBytes int64
	// ReadTimeout bounds reading one request, so a slow client cannot hold
	// a queue slot for long. Default 30s; zero means the default.
	ReadTimeout time.Duration
	// DrainTimeout bounds how long a stop waits for requests in flight
	// before closing their connections. Default 30s; zero means the
	// default.
	DrainTimeout time.Duration
	// Ready, when set, is called with the bound address once the endpoint
	// listens (useful with port 0).
	Ready func(addr net.Addr)
}

// PullConfig configures reading from Prometheus and Jaeger.
type PullConfig struct {
	// Prometheus is the base URL of a Prometheus server (or anything that
	// serves its HTTP API); empty means none.
	Prometheus string
	// Queries are the PromQL expressions read with query_range, each
	// optionally named "NAME=EXPR": the name stands in for the metric
	// name of series that have none (the results of rate(), sum(), ...).
	Queries []string
	// Step is the query_range resolution. Default 15s; zero means the
	// default.
	Step time.Duration

	// Jaeger is the base URL of a Jaeger query service; empty means none.
	Jaeger string
	// Services are the services whose traces are read.
	Services []string
	// Limit is the most traces asked for per request. A time window that
	// returns this many is split in two and read again. Default 1000; zero
	// means the default.
	Limit int

	// Start and End bound the time read. Required when pulling.
	Start, End time.Time

	// Timeout bounds one HTTP request, answer included. Default 30s; zero
	// means the default.
	Timeout time.Duration
	// Attempts is how many times a request is tried when the server is
	// unreachable, times out or answers 429 or 5xx. Default 5; zero means
	// the default.
	Attempts int
	// Backoff is the wait before the second attempt; it doubles with each
	// further attempt, up to MaxBackoff, with random jitter (between half
	// and all of it). A Retry-After header, when longer, wins, up to
	// MaxBackoff. Defaults 500ms and 10s; zero means the default.
	Backoff, MaxBackoff time.Duration
	// MaxResponseBytes caps one answer. Default 256 MiB; zero means the
	// default.
	MaxResponseBytes int64
	// Rand is the jitter's source; nil means math/rand/v2's global source
	// (seeded at random, so that clients retrying together spread out).
	Rand *rand.Rand
}

// Defaults of the fields whose zero value means "the default".
const (
	defaultListen          = "127.0.0.1:4318"
	defaultQueueSize       = 64
	defaultQueueBytes      = 64 << 20
	defaultMaxRequestBytes = 16 << 20
	defaultRetryAfter      = time.Second
	defaultSegmentBytes    = 64 << 20
	defaultReadTimeout     = 30 * time.Second
	defaultDrainTimeout    = 30 * time.Second
	defaultStep            = 15 * time.Second
	defaultLimit           = 1000
	defaultTimeout         = 30 * time.Second
	defaultAttempts        = 5
	defaultBackoff         = 500 * time.Millisecond
	defaultMaxBackoff      = 10 * time.Second
	defaultMaxResponse     = 256 << 20
)

// DefaultConfig returns the defaults described on the fields.
func DefaultConfig() Config {
	return Config{
		Receiver: ReceiverConfig{
			Listen:          defaultListen,
			QueueSize:       defaultQueueSize,
			QueueBytes:      defaultQueueBytes,
			MaxRequestBytes: defaultMaxRequestBytes,
			RetryAfter:      defaultRetryAfter,
			SegmentBytes:    defaultSegmentBytes,
			ReadTimeout:     defaultReadTimeout,
			DrainTimeout:    defaultDrainTimeout,
		},
		Pull: PullConfig{
			Step:             defaultStep,
			Limit:            defaultLimit,
			Timeout:          defaultTimeout,
			Attempts:         defaultAttempts,
			Backoff:          defaultBackoff,
			MaxBackoff:       defaultMaxBackoff,
			MaxResponseBytes: defaultMaxResponse,
		},
	}
}

// Pulling reports whether the run pulls rather than receives.
func (c *Config) Pulling() bool { return c.Pull.Prometheus != "" || c.Pull.Jaeger != "" }

// WorkDir returns the work directory: Work, or Out + ".collect".
func (c *Config) WorkDir() string {
	if c.Work != "" {
		return c.Work
	}
	return filepath.Clean(c.Out) + ".collect"
}

// Validate reports every problem with the config, each naming its field
// by its command-line flag.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Out == "" {
		add("out: a dataset directory is required")
	} else if filepath.Clean(c.WorkDir()) == filepath.Clean(c.Out) {
		add("work: must differ from --out")
	}
	if c.RunRows < 0 {
		add("sort-rows: %d is negative", c.RunRows)
	}
	r := &c.Receiver
	if r.QueueSize < 0 {
		add("queue: %d is negative", r.QueueSize)
	}
	if r.MaxRequestBytes < 0 {
		add("max-request-size: %d is negative", r.MaxRequestBytes)
	}
	switch qb, mr := r.QueueBytes, cmp.Or(r.MaxRequestBytes, defaultMaxRequestBytes); {
	case qb < 0:
		add("queue-memory: %d is negative", qb)
	case cmp.Or(qb, defaultQueueBytes) < mr:
		add("queue-memory: %d bytes is less than max-request-size (%d): the largest request could never be admitted", cmp.Or(qb, defaultQueueBytes), mr)
	}
	if r.SegmentBytes < 0 {
		add("segment-size: %d is negative", r.SegmentBytes)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"retry-after", r.RetryAfter}, {"read-timeout", r.ReadTimeout}, {"drain-timeout", r.DrainTimeout}} {
		if d.d < 0 {
			add("%s: %s is negative", d.name, d.d)
		}
	}
	if r.Listen != "" {
		if _, _, err := net.SplitHostPort(r.Listen); err != nil {
			add("listen: %w", err)
		}
	}
	errs = append(errs, c.Pull.validate(c.Finalize)...)
	return errors.Join(errs...)
}

func (p *PullConfig) validate(finalize bool) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, u := range []struct{ name, url string }{{"prometheus", p.Prometheus}, {"jaeger", p.Jaeger}} {
		if u.url == "" {
			continue
		}
		if finalize {
			add("from: %s cannot be combined with --finalize", u.name)
		}
		if err := checkBaseURL(u.url); err != nil {
			add("from: %s=%s: %w", u.name, u.url, err)
		}
	}
	switch {
	case p.Prometheus != "" && len(p.Queries) == 0:
		add("query: prometheus needs at least one --query")
	case p.Prometheus == "" && len(p.Queries) > 0:
		add("query: given without --from prometheus=URL")
	}
	for _, q := range p.Queries {
		if _, expr := splitQuery(q); expr == "" {
			add("query: %q is empty", q)
		}
	}
	switch {
	case p.Jaeger != "" && len(p.Services) == 0:
		add("service: jaeger needs at least one --service")
	case p.Jaeger == "" && len(p.Services) > 0:
		add("service: given without --from jaeger=URL")
	}
	if p.Prometheus != "" || p.Jaeger != "" {
		switch {
		case p.Start.IsZero() || p.End.IsZero():
			add("start, end: both are required when pulling")
		case !p.Start.Before(p.End):
			add("start, end: start %s is not before end %s", p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339))
		}
	}
	if p.Step < 0 {
		add("step: %s is negative", p.Step)
	}
	if p.Limit < 0 {
		add("limit: %d is negative", p.Limit)
	}
	if p.Attempts < 0 {
		add("attempts: %d is negative", p.Attempts)
	}
	if p.Timeout < 0 || p.Backoff < 0 || p.MaxBackoff < 0 {
		add("timeout, backoff: negative duration")
	}
	if p.MaxResponseBytes < 0 {
		add("max-response-size: %d is negative", p.MaxResponseBytes)
	}
	return errs
}

// checkBaseURL accepts an absolute http or https URL.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL")
	}
	return nil
}

// settled returns a copy of c with every zero "default" field set to its
// default.
func (c Config) settled() Config {
	d := DefaultConfig()
	r, dr := &c.Receiver, d.Receiver
	if r.Listen == "" {
		r.Listen = dr.Listen
	}
	setDefault(&r.QueueSize, dr.QueueSize)
	setDefault(&r.QueueBytes, dr.QueueBytes)
	setDefault(&r.MaxRequestBytes, dr.MaxRequestBytes)
	setDefault(&r.RetryAfter, dr.RetryAfter)
	setDefault(&r.SegmentBytes, dr.SegmentBytes)
	setDefault(&r.ReadTimeout, dr.ReadTimeout)
	setDefault(&r.DrainTimeout, dr.DrainTimeout)
	p, dp := &c.Pull, d.Pull
	setDefault(&p.Step, dp.Step)
	setDefault(&p.Limit, dp.Limit)
	setDefault(&p.Timeout, dp.Timeout)
	setDefault(&p.Attempts, dp.Attempts)
	setDefault(&p.Backoff, dp.Backoff)
	setDefault(&p.MaxBackoff, dp.MaxBackoff)
	setDefault(&p.MaxResponseBytes, dp.MaxResponseBytes)
	return c
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
