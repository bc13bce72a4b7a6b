package collect

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An open-loop load: root requests sent at Poisson arrival times whatever
// the answers, as the replay's --arrivals RATE offers them, and counted as
// the replay counts them. A closed loop (closedLoop) cannot overload what
// it drives: its clients wait for their answers. An open one can, and
// that is what issue 37 holds the replay's verdicts to.

// openReq is one request of an open-loop load.
type openReq struct {
	customer string
	at       time.Duration // sent, from the load's start
	took     time.Duration // from sent to its end (answer or error); set when ended
	ended    bool          // answered, or failed in transport, by the cutoff
	status   int           // HTTP status; 0 when not answered
	trace    string        // from the traceresponse header
	err      string        // transport error before the cutoff
}

// ok is whether the request succeeded by the cutoff: answered 200.
func (r *openReq) ok() bool { return r.ended && r.status == http.StatusOK }

// openLoad is what an open-loop load sent and saw.
type openLoad struct {
	rate     float64
	seed     uint64 // of the arrival times
	d, drain time.Duration
	reqs     []openReq
	lag      time.Duration // the most a send came after its arrival time
}

// poissonArrivals draws Poisson arrival times at rate per second over d
// from seed: the same schedule for the same seed.
func poissonArrivals(rate float64, d time.Duration, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x6f70656e6c6f6f70))
	var ats []time.Duration
	for at := 0.0; ; {
		at += rng.ExpFloat64() / rate
		if at >= d.Seconds() {
			return ats
		}
		ats = append(ats, time.Duration(at*float64(time.Second)))
	}
}

// openLoop sends GET /dispatch requests to base at Poisson arrival times
// (rate per second over d, drawn from seed), the customers in turn, each
// from its own goroutine on a client that waits up to 120 s, so a request
// waits for its answer however far behind the server falls. A request
// ends when its answer has been read, or when it fails in transport;
// only what ended by d + drain counts as ended (the replay's rule: the
// drain after the arrivals, then whatever is still out is unfinished).
// At d + drain every request still out is cancelled and left unfinished.
func openLoop(t *testing.T, base string, rate float64, d, drain time.Duration, seed uint64) *openLoad {
	t.Helper()
	ats := poissonArrivals(rate, d, seed)
	customers := []string{"123", "567", "392", "731"}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 1024
	client := &http.Client{Timeout: 120 * time.Second, Transport: transport}
	defer transport.CloseIdleConnections()

	l := &openLoad{rate: rate, seed: seed, d: d, drain: drain, reqs: make([]openReq, len(ats))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	cutoff := start.Add(d + drain)
	stop := time.AfterFunc(d+drain, cancel)
	defer stop.Stop()
	var wg sync.WaitGroup
	for k, at := range ats {
		time.Sleep(time.Until(start.Add(at)))
		r := &l.reqs[k]
		r.customer = customers[k%len(customers)]
		sent := time.Now()
		r.at = sent.Sub(start)
		l.lag = max(l.lag, r.at-at)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/dispatch?customer="+r.customer, nil)
			if err != nil {
				panic(err)
			}
			resp, err := client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done := time.Now()
			if ctx.Err() != nil || !done.Before(cutoff) {
				return // still out at the cutoff: unfinished
			}
			r.ended, r.took = true, done.Sub(sent)
			if err != nil {
				r.err = err.Error()
				return
			}
			r.status = resp.StatusCode
			// traceresponse: 00-<trace id>-<span id>-01
			if parts := strings.Split(resp.Header.Get("traceresponse"), "-"); len(parts) == 4 && len(parts[1]) == 32 {
				r.trace = parts[1]
			}
		}()
	}
	wg.Wait()
	return l
}

// openFigures are an open-loop load's figures, as a replay reports them:
// success is succeeded ÷ offered, latencies are of the succeeded
// requests, and the backlog test is the replay's.
type openFigures struct {
	Offered, Succeeded, Failed, Unfinished int
	Success                                float64
	P50, P99                               float64 // ms
	// BacklogPerSec is the growth of the requests sent and not ended over
	// the second half of the arrivals, per second; Grows says it passed
	// three standard deviations of the Poisson counts.
	BacklogPerSec float64
	Grows         bool
	// Overloaded: the backlog grew and requests were still out at the
	// cutoff (the replay's Outcome.Overloaded).
	Overloaded bool
}

// figures measures the load with windows of w (the replay's default
// window is 1 s).
func (l *openLoad) figures(w time.Duration) openFigures {
	var f openFigures
	var lat []float64
	n := max(1, int(math.Round(float64(l.d)/float64(w))))
	offered, ended := make([]int64, n), make([]int64, n)
	for i := range l.reqs {
		r := &l.reqs[i]
		f.Offered++
		if k := int(r.at / w); k < n {
			offered[k]++
		}
		switch {
		case !r.ended:
			f.Unfinished++
			continue
		case r.ok():
			f.Succeeded++
			lat = append(lat, float64(r.took)/1e6)
		default:
			f.Failed++
		}
		if k := int((r.at + r.took) / w); k < n {
			ended[k]++
		}
	}
	if f.Offered > 0 {
		f.Success = float64(f.Succeeded) / float64(f.Offered)
	}
	slices.Sort(lat)
	f.P50, f.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	f.BacklogPerSec, f.Grows = backlogGrowth(offered, ended, w)
	f.Overloaded = f.Grows && f.Unfinished > 0
	return f
}

// backlogGrowth is the replay's backlog test on per-window counts of
// requests offered and ended: over the second half of the windows,
// offered minus ended per second, and whether that difference passes
// 3·sqrt(offered + ended).
func backlogGrowth(offered, ended []int64, w time.Duration) (perSec float64, grows bool) {
	n := len(offered)
	from := n / 2
	if n-from < 2 {
		return 0, false
	}
	var o, e int64
	for k := from; k < n; k++ {
		o += offered[k]
		e += ended[k]
	}
	diff := float64(o - e)
	return diff / (float64(n-from) * w.Seconds()), diff > 3*math.Sqrt(float64(o+e))
}

// statuses counts the requests by how they ended, for the log.
func (l *openLoad) statuses() string {
	c := map[string]int{}
	for i := range l.reqs {
		r := &l.reqs[i]
		switch {
		case !r.ended:
			c["unfinished"]++
		case r.err != "":
			c["transport error"]++
		default:
			c[fmt.Sprint(r.status)]++
		}
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, c[k])
	}
	return b.String()
}

// TestOpenLoop drives two servers of one slot and 40 ms of work (25/s at
// most) open-loop: at 10/s the one keeps up, every request succeeds and
// no backlog grows; at 60/s the other falls behind, its backlog grows by
// about 35/s and what is queued at the cutoff is unfinished, not a
// success.
func TestOpenLoop(t *testing.T) {
	server := func() *httptest.Server {
		var slot sync.Mutex
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			slot.Lock()
			defer slot.Unlock()
			if r.Context().Err() != nil {
				return
			}
			time.Sleep(40 * time.Millisecond)
			w.Header().Set("traceresponse", "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01")
		}))
		t.Cleanup(s.Close)
		return s
	}
	d, drain := 3*time.Second, 500*time.Millisecond
	tests := []struct {
		name       string
		rate       float64
		overloaded bool
	}{
		{"keeps up", 10, false},
		{"overloaded", 60, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := server()
			l := openLoop(t, s.URL, tc.rate, d, drain, 1)
			f := l.figures(250 * time.Millisecond)
			t.Logf("%s: %+v (lag %s)", l.statuses(), f, l.lag)
			require.Len(t, l.reqs, len(poissonArrivals(tc.rate, d, 1)), "every arrival sent")
			require.Equal(t, f.Offered, f.Succeeded+f.Failed+f.Unfinished)
			require.Zero(t, f.Failed)
			require.Equal(t, tc.overloaded, f.Overloaded)
			require.Equal(t, tc.overloaded, f.Grows)
			require.InDelta(t, float64(f.Succeeded)/float64(f.Offered), f.Success, 1e-12)
			for i := range l.reqs {
				if r := &l.reqs[i]; r.ok() {
					require.Equal(t, "0123456789abcdef0123456789abcdef", r.trace)
					require.LessOrEqual(t, r.at+r.took, d+drain, "ended by the cutoff")
				}
			}
			if !tc.overloaded {
				require.Zero(t, f.Unfinished)
				require.GreaterOrEqual(t, f.P50, 40.0)
				require.Less(t, f.P99, 500.0)
				return
			}
			// 25/s served of 60/s offered: (d + drain) × 25 succeed.
			require.InDelta(t, (d+drain).Seconds()*25, float64(f.Succeeded), 15)
			require.Greater(t, f.BacklogPerSec, 20.0)
			require.Positive(t, f.Unfinished)
		})
	}
}

// TestBacklogGrowth: the Poisson test on the counts, as the replay has it.
func TestBacklogGrowth(t *testing.T) {
	w := time.Second
	// 10 offered, 10 ended a second: no growth.
	even := slices.Repeat([]int64{10}, 10)
	g, grows := backlogGrowth(even, even, w)
	require.Zero(t, g)
	require.False(t, grows)
	// 10 offered, 4 ended in each of the last 5 seconds: 30 > 3·sqrt(70).
	ended := slices.Concat(slices.Repeat([]int64{10}, 5), slices.Repeat([]int64{4}, 5))
	g, grows = backlogGrowth(even, ended, w)
	require.InDelta(t, 6.0, g, 1e-12)
	require.True(t, grows)
	// 10 offered, 7 ended: 15 < 3·sqrt(85), noise.
	ended = slices.Concat(slices.Repeat([]int64{10}, 5), slices.Repeat([]int64{7}, 5))
	_, grows = backlogGrowth(even, ended, w)
	require.False(t, grows)
	_, grows = backlogGrowth([]int64{100}, []int64{0}, w)
	require.False(t, grows, "too few windows to tell")
}
