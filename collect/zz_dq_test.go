package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"cascade"
	"cascade/rank"
)

func TestZZDelay(t *testing.T) {
	dir := os.Getenv("ZZ_DIR")
	if dir == "" {
		t.Skip()
	}
	before := loadNotifyCapture(t, dir+"/notify-before")
	bm, err := notifyModel(context.Background(), "b", before)
	if err != nil {
		t.Fatal(err)
	}
	var scens []*cascade.Scenario
	for _, ttl := range []float64{1000, 5000, 10000} {
		for _, md := range []int{0, 2} {
			p := map[string]any{"redelivery": "delay", "delay_ms": ttl}
			if md > 0 {
				p["max_deliveries"] = md
			}
			b, _ := json.Marshal(map[string]any{"queue": p})
			scens = append(scens, &cascade.Scenario{Name: fmt.Sprintf("zz ttl=%g md=%d", ttl, md),
				Nodes: map[string]json.RawMessage{"queue:rights": b, "queue:points": b}})
		}
	}
	rep, err := rankAt(context.Background(), bm, before.Measured.Rate, func(c *rank.Config) { c.Scenarios = scens })
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Rows {
		t.Logf("%2d %-60.60s %s %+.3g", i+1, r.Candidate.Name+": "+r.Candidate.Description, r.Verdict, r.Gain)
	}
}
