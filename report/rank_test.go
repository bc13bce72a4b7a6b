package report

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/incident"
	"cascade/internal/testutil"
	"cascade/rank"
)

// smallModel is a retrying client in front of a database of four slots,
// run near its capacity.
func smallModel() *cascade.Model {
	return &cascade.Model{
		Version: cascade.ModelVersion,
		Name:    "small",
		Entries: []cascade.Entry{{Node: "api", RatePerSec: 330, Share: 1, TimeoutMS: 60,
			Retry: &cascade.Retry{Reactivation: 1, MaxAttempts: 3}}},
		Nodes: []cascade.Node{
			{Name: "api", Replicas: 1, Service: cascade.Const(1)},
			{Name: "db", Replicas: 1, Concurrency: 4, Service: cascade.Dist{Kind: cascade.DistExp, Mean: 10}},
		},
		Edges: []cascade.Edge{{From: "api", To: "db", FanOut: cascade.Const(1), Propagation: 1}},
	}
}

func TestRankGolden(t *testing.T) {
	cfg := rank.DefaultConfig()
	cfg.Seeds = 3
	cfg.Duration = 10 * time.Second
	cfg.CapacityPoints = 4
	cfg.Scenarios = []*cascade.Scenario{{Name: "noop", Description: "db: an empty patch",
		Nodes: map[string]json.RawMessage{"db": json.RawMessage(`{}`)}}}
	rep, err := rank.Run(context.Background(), smallModel(), cfg)
	require.NoError(t, err)
	doc := &RankDocument{Model: "small.json", Rank: rep}
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		require.NoError(t, Rank(&buf, doc, f))
		testutil.Golden(t, "rank-"+string(f), buf.Bytes())
	}
	var buf bytes.Buffer
	require.NoError(t, RankText(&buf, doc, TextOptions{Wide: true}))
	testutil.Golden(t, "rank-wide", buf.Bytes())
	buf.Reset()
	require.NoError(t, Rank(&buf, doc, FormatJSON))
	var back RankDocument
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, rep.Seeds, back.Rank.Seeds)
	require.Error(t, Rank(&buf, doc, "html"))
}

// sampleIncident is a hand-made root-cause result, so the renderings are
// pinned independently of the analysis.
func sampleIncident() *incident.Incident {
	const t0 = int64(1661145490) * 1e9
	return &incident.Incident{
		WindowMS: 10000, StartNS: t0, EndNS: t0 + 60e9, Baseline: "the first 3 windows (30 s)",
		Origins: []string{"currency", "cart"},
		Nodes: []incident.NodeChange{
			{Node: "currency", Changed: true, AtNS: t0 + 30e9, Metric: "call_latency", Baseline: 8.5, Value: 455, Z: 32.5},
			{Node: "cart", Changed: true, AtNS: t0 + 40e9, Metric: "slow_share", Baseline: 0.05, Value: 0.36, Z: 4.8},
			{Node: "frontend", Changed: true, AtNS: t0 + 30e9, Metric: "latency", Baseline: 123, Value: 3430, Z: 78, ExplainedBy: []string{"currency"}},
			{Node: "ads", Note: "1 request in the normal range: too few to judge"},
			{Node: "email"},
		},
		Path: []incident.PathStep{{Caller: "frontend", Callee: "currency", CalleeAtNS: t0 + 30e9, CallerAtNS: t0 + 30e9,
			CallsPerParentBefore: 2.86, CallsPerParentDuring: 3.07, AttemptsPerCallBefore: 1, AttemptsPerCallDuring: 1.2}},
		Infectable: []incident.Infectability{{Node: "currency", Infected: 2, P99DeltaMS: 215, SuccessDelta: -0.01}, {Node: "cart"}},
		Slowdown:   0.5,
		Seeds:      []uint64{1, 2, 3, 4},
	}
}

func TestIncidentGolden(t *testing.T) {
	doc := &RankDocument{Incident: sampleIncident()}
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		require.NoError(t, Rank(&buf, doc, f))
		testutil.Golden(t, "incident-"+string(f), buf.Bytes())
	}
	var buf bytes.Buffer
	require.NoError(t, RankText(&buf, doc, TextOptions{Wide: true}))
	testutil.Golden(t, "incident-wide", buf.Bytes())
}
