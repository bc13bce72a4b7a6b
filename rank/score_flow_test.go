package rank

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
	"cascade/replay"
)

// flowResult is one replay's result on a queue model: the root requests
// all succeed (the publish is async), the flows as given, and the queue
// q-rights's and broker mq's counts.
func flowResult(flows int64, flowOK, flowP99 float64, q cascade.QueueOutcome, b cascade.BrokerOutcome) *replay.Result {
	r := &replay.Result{}
	r.DurationMS = 10000
	r.Roots, r.Succeeded, r.SuccessRate, r.Goodput = 100, 100, 1, 10
	r.LatencyP99MS = 5
	r.Flows, r.FlowSuccessRate, r.FlowP50MS, r.FlowP99MS = flows, flowOK, flowP99/2, flowP99
	r.Nodes = []cascade.NodeOutcome{{Name: "q-rights", Calls: 100, Queue: &q}}
	b.Name = "mq"
	r.Brokers = []cascade.BrokerOutcome{b}
	return r
}

func TestScoreFlows(t *testing.T) {
	healthy := cascade.QueueOutcome{Published: 100, Delivered: 100, Acked: 100}
	// The baseline: 90% of flows succeed, the root requests all do.
	base := [][]*replay.Result{{
		flowResult(100, 0.90, 400, healthy, cascade.BrokerOutcome{}),
		flowResult(100, 0.92, 420, healthy, cascade.BrokerOutcome{}),
		flowResult(100, 0.91, 410, healthy, cascade.BrokerOutcome{}),
	}}
	noFlows := [][]*replay.Result{{
		flowResult(0, 0, 0, healthy, cascade.BrokerOutcome{}),
		flowResult(0, 0, 0, healthy, cascade.BrokerOutcome{}),
		flowResult(0, 0, 0, healthy, cascade.BrokerOutcome{}),
	}}
	dropped := cascade.QueueOutcome{Published: 100, Delivered: 80, Acked: 80, Dropped: 20}
	blocked := cascade.QueueOutcome{Published: 100, Delivered: 100, Acked: 100, Rejected: 15, BlockedMS: 30000}
	alarm := cascade.BrokerOutcome{Alarms: 2, AlarmMS: 3000}
	tests := []struct {
		name      string
		o         Objective
		base      [][]*replay.Result
		cand      [][]*replay.Result
		wantDiff  float64 // mean objective difference
		wantFlows bool
		wantCost  string
	}{
		{"flow success, not the roots'", ObjectiveSuccess, base, [][]*replay.Result{{
			flowResult(100, 0.99, 300, healthy, cascade.BrokerOutcome{}),
			flowResult(100, 0.99, 300, healthy, cascade.BrokerOutcome{}),
			flowResult(100, 0.99, 300, healthy, cascade.BrokerOutcome{}),
		}}, 0.08, true, "none"},
		{"flow goodput: successful flows per second", ObjectiveGoodput, base, [][]*replay.Result{{
			flowResult(100, 0.99, 300, healthy, cascade.BrokerOutcome{}),
			flowResult(100, 0.99, 300, healthy, cascade.BrokerOutcome{}),
			flowResult(100, 0.99, 300, healthy, cascade.BrokerOutcome{}),
		}}, 0.8, true, "none"},
		{"flow p99", ObjectiveP99, base, [][]*replay.Result{{
			flowResult(100, 0.91, 300, healthy, cascade.BrokerOutcome{}),
			flowResult(100, 0.91, 300, healthy, cascade.BrokerOutcome{}),
			flowResult(100, 0.91, 300, healthy, cascade.BrokerOutcome{}),
		}}, -110, true, "none"},
		{"overflow drops cost flow success", ObjectiveSuccess, base, [][]*replay.Result{{
			flowResult(100, 0.70, 300, dropped, cascade.BrokerOutcome{}),
			flowResult(100, 0.72, 300, dropped, cascade.BrokerOutcome{}),
			flowResult(100, 0.71, 300, dropped, cascade.BrokerOutcome{}),
		}}, -0.2, true, "flow success −20.0 pp (q-rights: the full queue drops its oldest messages (overflow drop-head; dropped 0 → 0.2 per root request))"},
		{"the memory alarm blocks publishers", ObjectiveSuccess, base, [][]*replay.Result{{
			flowResult(100, 0.80, 300, blocked, alarm),
			flowResult(100, 0.82, 300, blocked, alarm),
			flowResult(100, 0.81, 300, blocked, alarm),
		}}, -0.1, true, "flow success −10.0 pp (q-rights: broker mq's memory alarm blocks publishers (alarm on 0 ms → 3 s a run; blocked 0 ms → 300 ms per root request))"},
		{"no flows: the root request's figures", ObjectiveSuccess, noFlows, noFlows, 0, false, "none"},
	}
	m := &cascade.Model{Nodes: []cascade.Node{{Name: "q-rights", Queue: &cascade.Queue{Broker: "mq", Consumers: 1}}},
		Brokers: []cascade.Broker{{Name: "mq"}}}
	regimes := []Regime{{Name: "normal"}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wantFlows, flowsIn(tc.base))
			d := objectiveDiffs(tc.o, tc.base, tc.cand)
			require.InDelta(t, tc.wantDiff, tInterval(d).Mean, 1e-9)
			effs := effects(regimes, tc.base, tc.cand)
			metrics := map[string]bool{}
			for _, e := range effs {
				metrics[e.Metric] = true
			}
			require.Equal(t, tc.wantFlows, metrics[MetricFlowSuccess])
			require.Equal(t, tc.wantFlows, metrics[MetricFlowP50])
			if !tc.wantFlows {
				require.Len(t, effs, len(reported))
			}
			require.Equal(t, tc.wantCost, costOf(m, regimes, effs, tc.base, tc.cand).Text)
		})
	}
}

func TestObjectiveScoredMetric(t *testing.T) {
	tests := []struct {
		o           Objective
		flows, root string
	}{
		{ObjectiveGoodput, MetricFlowGoodput, MetricGoodput},
		{ObjectiveSuccess, MetricFlowSuccess, MetricSuccess},
		{ObjectiveP99, MetricFlowP99, MetricP99},
		{ObjectiveAmplification, MetricAmplification, MetricAmplification},
		{ObjectiveSpread, MetricSpread, MetricSpread},
		{ObjectiveComposite, "", ""},
	}
	for _, tc := range tests {
		t.Run(string(tc.o), func(t *testing.T) {
			require.Equal(t, tc.flows, tc.o.ScoredMetric(true))
			require.Equal(t, tc.root, tc.o.ScoredMetric(false))
			require.Equal(t, tc.root, tc.o.Metric())
		})
	}
}

// TestMechanismNamesWhatTheFixRemoves holds the "why" of a win on a queue
// model to the broker or queue trouble it removes: the memory alarm that
// blocked publishers, or the overflow that dropped messages.
func TestMechanismNamesWhatTheFixRemoves(t *testing.T) {
	healthy := cascade.QueueOutcome{Published: 100, Delivered: 100, Acked: 100}
	dropped := cascade.QueueOutcome{Published: 100, Delivered: 80, Acked: 80, Dropped: 20}
	alarm := cascade.BrokerOutcome{Alarms: 2, AlarmMS: 3000}
	three := func(q cascade.QueueOutcome, b cascade.BrokerOutcome, ok float64) [][]*replay.Result {
		return [][]*replay.Result{{flowResult(100, ok, 300, q, b), flowResult(100, ok, 300, q, b), flowResult(100, ok, 300, q, b)}}
	}
	refused := cascade.QueueOutcome{Published: 100, Delivered: 80, Acked: 80, Rejected: 20}
	m := &cascade.Model{Nodes: []cascade.Node{{Name: "q-rights", Queue: &cascade.Queue{Broker: "mq", Consumers: 1}}},
		Brokers: []cascade.Broker{{Name: "mq"}}}
	// A publisher that fails at once while blocked: the queue's refusals
	// are the alarm's.
	blocking := &cascade.Model{Nodes: []cascade.Node{{Name: "gw"}, {Name: "q-rights", Queue: &cascade.Queue{Broker: "mq", Consumers: 1}}},
		Edges:   []cascade.Edge{{From: "gw", To: "q-rights", FailBlocked: true}},
		Brokers: []cascade.Broker{{Name: "mq"}}}
	regimes := []Regime{{Name: "normal"}}
	for _, tc := range []struct {
		name       string
		base, cand [][]*replay.Result
		want       string
		blocking   bool // the queue's publisher fails at once while blocked
	}{
		{"the alarm goes", three(healthy, alarm, 0.8), three(healthy, cascade.BrokerOutcome{}, 0.99),
			"broker mq's memory alarm (publishers blocked) on 3 s → 0 ms a run", false},
		{"the drops go", three(dropped, cascade.BrokerOutcome{}, 0.8), three(healthy, cascade.BrokerOutcome{}, 0.99),
			"q-rights overflow drops 0.2 → 0 per root", false},
		{"refusals by a queue that caps nothing are the alarm's", three(refused, cascade.BrokerOutcome{AlarmMS: 500}, 0.8), three(healthy, cascade.BrokerOutcome{AlarmMS: 400}, 0.99),
			"q-rights publishes refused under broker mq's memory alarm 0.2 → 0 per root", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := m
			if tc.blocking {
				mm = blocking
			}
			why, atBroker := mechanism(mm, ObjectiveSuccess, Win, regimes, tc.base, tc.cand)
			require.Equal(t, tc.want, why)
			require.True(t, atBroker)
		})
	}
}

// TestCostNamesItsTraffic: a success cost read under a traffic other
// than the first says which, so that it does not read as another figure
// of the answer's "also" line, which gives the first traffic's (issue
// 39: "success −0.2 pp" beside "success 100.0% → 99.9% (-0.1 pp)").
func TestCostNamesItsTraffic(t *testing.T) {
	regimes := []Regime{{Name: "normal"}, {Name: "surge ×2 from 200 s for 200 s"}}
	success := func(regime string, mean float64) Effect {
		return Effect{Metric: MetricSuccess, Regime: regime, Delta: Interval{Mean: mean, Low: mean - 0.0005, High: mean + 0.0005}}
	}
	tests := []struct {
		name string
		effs []Effect
		want string
	}{
		{"worst under the first traffic", []Effect{success("normal", -0.002), success(regimes[1].Name, -0.001)}, "success −0.2 pp"},
		{"worst under the surge", []Effect{success("normal", -0.001), success(regimes[1].Name, -0.002)}, "success −0.2 pp under surge ×2 from 200 s for 200 s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, costOf(&cascade.Model{}, regimes, tc.effs, nil, nil).Text)
		})
	}
}
