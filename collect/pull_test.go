package collect

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/dataset"
	"cascade/ingest"
)

var (
	pullStart = time.Unix(1_796_212_100, 0).UTC()
	pullEnd   = pullStart.Add(90 * time.Second)
)

// pullConfig is a config pulling into a fresh dataset with quick retries.
func pullConfig(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.Pull.Start, cfg.Pull.End = pullStart, pullEnd
	cfg.Pull.Step = time.Second
	cfg.Pull.Timeout = 500 * time.Millisecond
	cfg.Pull.Attempts = 3
	cfg.Pull.Backoff = time.Millisecond
	cfg.Pull.MaxBackoff = 5 * time.Millisecond
	cfg.Pull.Rand = rand.New(rand.NewPCG(1, 2))
	return cfg
}

// promMatrix answers a query_range with one series of a point per step.
func promMatrix(r *http.Request, name string) string {
	q := r.URL.Query()
	start, _ := strconv.ParseFloat(q.Get("start"), 64)
	end, _ := strconv.ParseFloat(q.Get("end"), 64)
	step, _ := strconv.ParseFloat(q.Get("step"), 64)
	var vals []string
	for t := start; t <= end; t += step {
		vals = append(vals, fmt.Sprintf(`[%g,"%g"]`, t, t-start))
	}
	return fmt.Sprintf(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":%q,"job":"hotrod","instance":"127.0.0.1:8080"},"values":[%s]}]}}`,
		name, strings.Join(vals, ","))
}

// server is an httptest server answering with fn, counting requests.
type server struct {
	*httptest.Server
	n atomic.Int64
}

func newServer(t *testing.T, fn func(n int64, w http.ResponseWriter, r *http.Request)) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fn(s.n.Add(1), w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestPullPrometheus(t *testing.T) {
	slow := make(chan struct{})
	defer close(slow)
	tests := []struct {
		name     string
		handler  func(n int64, w http.ResponseWriter, r *http.Request)
		queries  []string
		samples  int64
		requests int64
		retries  int64
		err      string
		parseErr bool
	}{
		{
			name: "series", queries: []string{`{__name__=~"hotrod_.+"}`}, samples: 91, requests: 1,
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/query_range" || r.URL.Query().Get("query") != `{__name__=~"hotrod_.+"}` {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, promMatrix(r, "hotrod_requests_total"))
			},
		},
		{
			name: "500s then success", queries: []string{"up"}, samples: 91, requests: 1, retries: 2,
			handler: func(n int64, w http.ResponseWriter, r *http.Request) {
				if n <= 2 {
					http.Error(w, "overloaded", http.StatusInternalServerError)
					return
				}
				fmt.Fprint(w, promMatrix(r, "up"))
			},
		},
		{
			name: "429 with Retry-After then success", queries: []string{"up"}, samples: 91, requests: 1, retries: 1,
			handler: func(n int64, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				fmt.Fprint(w, promMatrix(r, "up"))
			},
		},
		{
			name: "always 503", queries: []string{"up"},
			err: `failed after 3 attempts: 503 Service Unavailable: "down for maintenance"`,
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			},
		},
		{
			name: "garbage", queries: []string{"up"}, parseErr: true,
			err: `/api/v1/query_range: query "up": not a Prometheus API answer: answer (byte 1): invalid character '<' looking for beginning of value: malformed record`,
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "<html>hello</html>")
			},
		},
		{
			name: "truncated answer", queries: []string{"up"}, parseErr: true,
			err: "not a Prometheus API answer",
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, promMatrix(r, "up")[:100])
			},
		},
		{
			name: "query error", queries: []string{"rate(up"},
			err: `query "rate(up": 400 Bad Request: query failed: bad_data: 1:8: parse error: unclosed left parenthesis`,
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"1:8: parse error: unclosed left parenthesis"}`)
			},
		},
		{
			name: "not prometheus", queries: []string{"up"},
			err: `query "up": 404 Not Found: "404 page not found"`,
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				http.NotFound(w, r)
			},
		},
		{
			name: "slow past the timeout", queries: []string{"up"},
			err: "timed out after 3 attempts",
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				select {
				case <-slow:
				case <-r.Context().Done():
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			cfg := pullConfig(t)
			cfg.Pull.Prometheus = srv.URL
			cfg.Pull.Queries = tc.queries
			res, err := Run(context.Background(), cfg)
			if tc.err != "" {
				require.Error(t, err)
				require.ErrorContains(t, err, "prometheus "+srv.URL)
				require.ErrorContains(t, err, tc.err)
				var pe *ingest.ParseError
				require.Equal(t, tc.parseErr, errors.As(err, &pe), "%v", err)
				require.NoFileExists(t, filepath.Join(cfg.Out, dataset.SpansFile))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.samples, res.Summary.Samples)
			require.Equal(t, tc.requests, res.Pull.Requests)
			require.Equal(t, tc.retries, res.Pull.Retries)
		})
	}
}

func TestPullPrometheusWindows(t *testing.T) {
	var mu sync.Mutex
	var windows [][2]string
	srv := newServer(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		windows = append(windows, [2]string{q.Get("start"), q.Get("end")})
		mu.Unlock()
		name := "rate_x"
		fmt.Fprint(w, strings.Replace(promMatrix(r, name), `"__name__":"rate_x",`, "", 1))
	})
	cfg := pullConfig(t)
	cfg.Pull.Prometheus = srv.URL + "/"
	cfg.Pull.Queries = []string{"dispatch_rate=rate(x[1m])"}
	cfg.Pull.End = cfg.Pull.Start.Add(25000 * time.Second)
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, [][2]string{
		{"1796212100.000", "1796222099.000"},
		{"1796222100.000", "1796232099.000"},
		{"1796232100.000", "1796237100.000"},
	}, windows, "windows of 10,000 steps")
	require.Equal(t, int64(25001), res.Summary.Samples)
	var metric string
	require.NoError(t, dataset.ReadSamples(cfg.Out, func(s *cascade.Sample) error {
		metric = strings.Clone(s.Metric)
		return nil
	}))
	require.Equal(t, "dispatch_rate", metric, "the query's name stands in for the missing __name__")
}

func TestPullUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cfg := pullConfig(t)
	cfg.Pull.Prometheus = "http://" + addr
	cfg.Pull.Queries = []string{"up"}
	_, err = Run(context.Background(), cfg)
	var fe *FetchError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, 3, fe.Attempts)
	require.ErrorContains(t, err, "prometheus http://"+addr+"/api/v1/query_range?")
	require.ErrorContains(t, err, "unreachable after 3 attempts")
	require.ErrorContains(t, err, "connection refused")
}

func TestPullJaeger(t *testing.T) {
	v3, err := os.ReadFile("../testdata/hotrod-baseline/sample-trace-otlp.json")
	require.NoError(t, err)
	legacy, err := os.ReadFile("../testdata/hotrod-baseline/sample-trace-jaeger-legacy.json")
	require.NoError(t, err)
	noTraces := `{"error":{"httpCode":404,"message":"No traces found"}}`
	tests := []struct {
		name    string
		handler func(n int64, w http.ResponseWriter, r *http.Request)
		spans   int64
		paths   []string
		err     string
	}{
		{
			name: "api_v3", spans: 40, paths: []string{"/api/v3/traces"},
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				if q.Get("query.service_name") != "frontend" || q.Get("query.start_time_min") != "2026-12-02T11:48:20Z" || q.Get("query.num_traces") != "1000" {
					http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
					return
				}
				w.Write(v3)
			},
		},
		{
			name: "legacy when api_v3 is missing", spans: 40, paths: []string{"/api/v3/traces", "/api/traces"},
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/traces" {
					http.NotFound(w, r)
					return
				}
				q := r.URL.Query()
				if q.Get("service") != "frontend" || q.Get("start") != "1796212100000000" || q.Get("limit") != "1000" {
					http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
					return
				}
				w.Write(legacy)
			},
		},
		{
			name: "no traces", spans: 0, paths: []string{"/api/v3/traces"},
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				http.Error(w, noTraces, http.StatusNotFound)
			},
		},
		{
			name: "not jaeger", paths: []string{"/api/v3/traces", "/api/traces"},
			err: "404 Not Found on both /api/v3/traces and /api/traces",
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				http.NotFound(w, r)
			},
		},
		{
			name: "garbage", paths: []string{"/api/v3/traces"},
			err: `/api/v3/traces: service "frontend": not an api_v3 answer: answer`,
			handler: func(_ int64, w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, `{"result": {"resourceSpans": [{"scopeSpans": 7`)
			},
		},
		{
			name: "500 then success", spans: 40, paths: []string{"/api/v3/traces", "/api/v3/traces"},
			handler: func(n int64, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					http.Error(w, "storage failure", http.StatusInternalServerError)
					return
				}
				w.Write(v3)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var paths []string
			srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				paths = append(paths, r.URL.Path)
				mu.Unlock()
				tc.handler(n, w, r)
			})
			cfg := pullConfig(t)
			cfg.Pull.Jaeger = srv.URL
			cfg.Pull.Services = []string{"frontend"}
			res, err := Run(context.Background(), cfg)
			require.Equal(t, tc.paths, paths)
			if tc.err != "" {
				require.ErrorContains(t, err, "jaeger "+srv.URL)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.spans, res.Summary.Spans)
		})
	}
}

// TestPullJaegerSplitsWindows answers any window wider than 10s with as
// many traces as the limit: the reader splits until windows answer fewer.
func TestPullJaegerSplitsWindows(t *testing.T) {
	var mu sync.Mutex
	var widths []time.Duration
	srv := newServer(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		lo, err1 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_min"))
		hi, err2 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_max"))
		if err := errors.Join(err1, err2); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		limit, _ := strconv.Atoi(q.Get("query.num_traces"))
		mu.Lock()
		widths = append(widths, hi.Sub(lo))
		mu.Unlock()
		n := 1
		if hi.Sub(lo) > 10*time.Second {
			n = limit
		}
		// One span per trace, trace ids from the window's start.
		td := testTraces(uint64(lo.Unix()), 1, "frontend")
		for i := 1; i < n; i++ {
			testTraces(uint64(lo.Unix())*100+uint64(i), 1, "frontend").ResourceSpans().At(0).CopyTo(td.ResourceSpans().AppendEmpty())
		}
		b := jsonBody(t, td)
		fmt.Fprintf(w, `{"result":%s}`, b)
	})
	cfg := pullConfig(t)
	cfg.Pull.Jaeger = srv.URL
	cfg.Pull.Services = []string{"frontend"}
	cfg.Pull.Limit = 5
	cfg.Pull.End = cfg.Pull.Start.Add(40 * time.Second)
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{40 * time.Second, 20 * time.Second, 10 * time.Second, 10 * time.Second, 20 * time.Second, 10 * time.Second, 10 * time.Second}, widths)
	require.Equal(t, int64(4), res.Summary.Traces)
	require.Equal(t, int64(0), res.Pull.Truncated)
}

// TestPullInterrupted stops a pull midway: the dataset is not written and
// what was read stays in the work directory for --finalize.
func TestPullInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newServer(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 2 {
			cancel()
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, promMatrix(r, "up"))
	})
	cfg := pullConfig(t)
	cfg.Pull.Prometheus = srv.URL
	cfg.Pull.Queries = []string{"up", "down"}
	_, err := Run(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.NoDirExists(t, cfg.Out)
	segs, _, err := listSegments(cfg.WorkDir())
	require.NoError(t, err)
	require.Len(t, segs, 1)

	cfg.Finalize = true
	cfg.Pull.Prometheus, cfg.Pull.Queries = "", nil
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, int64(91), res.Summary.Samples)
	require.NoDirExists(t, cfg.WorkDir())
}

func TestAPIv3ErrorDocument(t *testing.T) {
	require.True(t, isAPIv3Error([]byte(`{"error":{"httpCode":404,"message":"No traces found"}}`)))
	require.False(t, isAPIv3Error([]byte("404 page not found\n")))
	require.False(t, isAPIv3Error([]byte(`{"error":null}`)))
}
