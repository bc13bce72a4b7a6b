package replay

import (
	"encoding/json"

	"cascade"
)

// The scenario patches the stages above replay build: merge patches
// (RFC 7386) of a node, an edge or a distribution, for Apply.

// distKeys are the JSON fields of cascade.Dist: a patch that replaces a
// distribution nulls the ones it does not set, because a merge patch
// merges objects key by key.
var distKeys = []string{"kind", "value", "mean", "mu", "sigma", "min", "max", "p50", "p95", "p99",
	"points", "spike_prob", "spike", "floor", "cap"}

// DistPatch returns a merge patch that replaces a distribution by d,
// nulling the fields d leaves out.
func DistPatch(d cascade.Dist) map[string]any {
	return replaceObject(d, distKeys)
}

// replaceObject returns v's JSON object with null for every key of keys
// that v leaves out.
func replaceObject(v any, keys []string) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("replay: " + err.Error())
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic("replay: " + err.Error())
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			m[k] = nil
		}
	}
	return m
}

// RawPatch marshals a merge patch.
func RawPatch(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("replay: " + err.Error())
	}
	return b
}

// NodePatch returns a scenario's node patches holding one merge patch for
// the node name.
func NodePatch(name string, patch map[string]any) map[string]json.RawMessage {
	return map[string]json.RawMessage{name: RawPatch(patch)}
}

// SlowNode returns a node merge patch that makes n's service f times
// longer (f > 0), its observed tiers too (replay may draw from them).
func SlowNode(n *cascade.Node, f float64) map[string]any {
	p := map[string]any{"service_ms": DistPatch(n.Service.Times(f))}
	if t := n.Tiers; t != nil {
		st := *t
		st.P50 *= f
		st.P95 *= f
		st.P99 *= f
		st.Mean *= f
		if len(t.Points) > 0 {
			st.Points = make([]float64, len(t.Points))
			for i, x := range t.Points {
				st.Points[i] = x * f
			}
		}
		p["tiers"] = replaceObject(st, []string{"p50", "p95", "p99", "mean", "points"})
	}
	return p
}
