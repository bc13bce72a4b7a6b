package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// brokerWatch polls the broker: every queue's ready messages through a
// passive declare (on a connection that never publishes, so an alarm does
// not block it), and memory and the memory alarm from rabbitmq_prometheus.
type brokerWatch struct {
	cancel   context.CancelFunc
	done     sync.WaitGroup
	mu       sync.Mutex
	peak     map[string]int64
	alarm    bool
	since    time.Time // the alarm's start, while it is on
	alarmFor time.Duration
	memPeak  int64
	memLimit int64
}

type brokerSnapshot struct {
	peak     map[string]int64
	alarm    bool
	alarmFor time.Duration
	memPeak  int64
	memLimit int64
}

func (a *app) watchBroker(ctx context.Context) (*brokerWatch, error) {
	conn, err := a.dial("watch")
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &brokerWatch{cancel: cancel, peak: map[string]int64{}}
	var queues []string
	for _, q := range a.set.tasks {
		queues = append(queues, q)
		if a.set.delay > 0 {
			queues = append(queues, q+".delay")
		}
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, q := range queues {
				st, err := ch.QueueDeclarePassive(q, false, false, false, false, nil)
				if err != nil {
					fmt.Fprintf(os.Stderr, "notify: watch %s: %v\n", q, err)
					return
				}
				w.mu.Lock()
				w.peak[q] = max(w.peak[q], int64(st.Messages))
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	if a.cfg.MetricsURL != "" {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			client := &http.Client{Timeout: 2 * time.Second}
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				if v, err := scrape(ctx, client, a.cfg.MetricsURL); err == nil {
					w.note(v)
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	return w, nil
}

// note folds one scrape of the broker's metrics in.
func (w *brokerWatch) note(v map[string]float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.memPeak = max(w.memPeak, int64(v["rabbitmq_process_resident_memory_bytes"]))
	w.memLimit = int64(v["rabbitmq_resident_memory_limit_bytes"])
	on := v["rabbitmq_alarms_memory_used_watermark"] == 1
	now := time.Now()
	switch {
	case on && w.since.IsZero():
		w.alarm, w.since = true, now
	case !on && !w.since.IsZero():
		w.alarmFor += now.Sub(w.since)
		w.since = time.Time{}
	}
}

// noteBlocked records a connection.blocked from the broker.
func (w *brokerWatch) noteBlocked(conn, reason string) {
	if w == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "notify: connection %s blocked: %s\n", conn, reason)
	w.mu.Lock()
	w.alarm = true
	w.mu.Unlock()
}

func (w *brokerWatch) snapshot() brokerSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := brokerSnapshot{peak: map[string]int64{}, alarm: w.alarm, alarmFor: w.alarmFor, memPeak: w.memPeak, memLimit: w.memLimit}
	if !w.since.IsZero() {
		s.alarmFor += time.Since(w.since)
	}
	for k, v := range w.peak {
		s.peak[k] = v
	}
	return s
}

func (w *brokerWatch) stop() {
	if w == nil {
		return
	}
	w.cancel()
	w.done.Wait()
}

// scrape reads the unlabelled samples of a Prometheus text exposition.
func scrape(ctx context.Context, client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "rabbitmq_") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}
