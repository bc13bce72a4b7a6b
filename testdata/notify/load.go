package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// load sends events to the gateway open loop: Poisson arrivals at the
// rate (times the burst multiplier inside the burst window) for the
// duration, seeded; each event is sent at its time whatever the answers
// to the earlier ones. An event the gateway does not answer in time
// counts as rejected.
func load(ctx context.Context, c Config, a *app) {
	rng := rand.New(rand.NewPCG(c.Seed, 0x6c6f6164))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	var wg sync.WaitGroup
	start := time.Now()
	at := time.Duration(0)
	for id := int64(1); ; id++ {
		rate := c.Rate
		if at >= c.BurstAt && at < c.BurstAt+c.BurstFor {
			rate *= c.Burst
		}
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if at >= c.Duration {
			break
		}
		time.Sleep(time.Until(start.Add(at)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/events?id=%d", a.gatewayURL, id), nil)
			resp, err := client.Do(req)
			if err != nil {
				a.flows.answer(id, false)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
}
