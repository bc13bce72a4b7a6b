package replay

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"cascade"
)

func TestMergePatch(t *testing.T) {
	// RFC 7386, appendix A (a selection).
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.target+" + "+tc.patch, func(t *testing.T) {
			var target, patch any
			require.NoError(t, json.Unmarshal([]byte(tc.target), &target))
			require.NoError(t, json.Unmarshal([]byte(tc.patch), &patch))
			got, err := json.Marshal(mergePatch(target, patch))
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
		})
	}
}

func scenarioModel() *cascade.Model {
	m := mmodel("api", 10, []cascade.Node{
		mnode("api", 1, 0, cascade.Const(1)),
		mnode("db.primary", 1, 4, cascade.Const(5)),
		mnode("cache", 1, 0, cascade.Const(1)),
	}, medge("api", "db.primary"), medge("api", "cache"))
	m.Edges[0].Retry = &cascade.Retry{Reactivation: 1, MaxAttempts: 3}
	return m
}

func TestApplyScenario(t *testing.T) {
	m := scenarioModel()
	s, err := ParseScenario([]byte(`
name: tighten
edges:
  "*->*": {timeout_ms: 100}
  api->db.primary: {retry: {max_attempts: 1}, timeout_ms: 50}
nodes:
  "*": {deadline_propagation: true}
  db.primary: {concurrency: 8, queue_cap: 100, breaker: {error_rate: 0.5, window: 20, open_ms: 1000, half_open_probes: 2}}
entries:
  api: {rate_limit: {rate_per_sec: 5, burst: 2}}
traffic: {kind: closed, users: 3, think_ms: 10}
`))
	require.NoError(t, err)
	out, traffic, err := Apply(m, s)
	require.NoError(t, err)
	require.Equal(t, 3, m.Edges[0].Retry.MaxAttempts, "the input model is not changed")
	db := out.Node("db.primary")
	require.Equal(t, 8, db.Concurrency)
	require.Equal(t, 100, db.QueueCap)
	require.True(t, db.DeadlinePropagation)
	require.True(t, out.Node("cache").DeadlinePropagation)
	require.Equal(t, 1, out.Edges[0].Retry.MaxAttempts)
	require.Equal(t, 1.0, out.Edges[0].Retry.Reactivation, "merge keeps fields the patch does not name")
	require.Equal(t, 50.0, out.Edges[0].TimeoutMS, "named patches apply after wildcards")
	require.Equal(t, 100.0, out.Edges[1].TimeoutMS)
	require.Equal(t, 5.0, out.Entries[0].RateLimit.RatePerSec)
	require.Equal(t, cascade.TrafficClosed, traffic.Kind)
}

func TestApplyScenarioErrors(t *testing.T) {
	m := scenarioModel()
	tests := []struct {
		name string
		doc  string
		want error
		msg  string
	}{
		{"unknown node", `nodes: {mysql: {concurrency: 2}}`, ErrUnknownTarget,
			`nodes["mysql"]: no such node, edge or entry in the model (nodes: api, cache, db.primary)`},
		{"misspelt node", `nodes: {cahce: {concurrency: 2}}`, ErrUnknownTarget,
			`nodes["cahce"]: no such node, edge or entry in the model; did you mean cache?`},
		{"unknown edge", `edges: {"api->mysql": {timeout_ms: 2}}`, ErrUnknownTarget,
			`edges["api->mysql"]: no such node, edge or entry in the model (edges: api->cache, api->db.primary)`},
		{"unknown entry", `entries: {cache: {share: 1}}`, ErrUnknownTarget,
			`entries["cache"]: no such node, edge or entry in the model (entries: api)`},
		{"misspelt field", `nodes: {api: {concurency: 2}}`, nil,
			`nodes["api"]: no field concurency in node; did you mean concurrency?`},
		{"wrong type", `edges: {"api->cache": {retry: {max_attempts: two}}}`, nil,
			`edges["api->cache"]: retry.max_attempts: want an integer`},
		{"invalid value", `nodes: {api: {replicas: 0}}`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScenario([]byte(tc.doc))
			require.NoError(t, err)
			_, _, err = Apply(m, s)
			require.Error(t, err)
			if tc.want != nil {
				require.True(t, errors.Is(err, tc.want), "%v", err)
			}
			if tc.msg != "" {
				require.EqualError(t, err, tc.msg)
			}
		})
	}
	_, err := ParseScenario([]byte(`nodez: {}`))
	require.Error(t, err, "unknown top-level field")
}

func TestParseSet(t *testing.T) {
	m := scenarioModel()
	s, err := ParseSet(m, []string{
		"node.db.primary.concurrency=2",
		"node.db.primary.service_ms={kind: exp, mean: 7}",
		"edge.api->db.primary.retry=null",
		"edge.*->cache.timeout_ms=20",
		"entry.api.rate_per_sec=99",
		"traffic.rate_per_sec=42",
	})
	require.NoError(t, err)
	out, traffic, err := Apply(m, s)
	require.NoError(t, err)
	db := out.Node("db.primary")
	require.Equal(t, 2, db.Concurrency)
	// A merge patch keeps the fields it does not name (value 5 stays,
	// unused by exp).
	require.Equal(t, cascade.Dist{Kind: cascade.DistExp, Mean: 7, Value: 5}, db.Service)
	require.Nil(t, out.Edges[0].Retry)
	require.Equal(t, 20.0, out.Edges[1].TimeoutMS)
	require.Equal(t, 99.0, out.Entries[0].RatePerSec)
	require.Equal(t, 42.0, traffic.RatePerSec)

}

// TestParseSetErrors gives --set keys that name nothing or values of the
// wrong type: each error names the --set, what is wrong, and the fix (the
// names near a misspelt one, the type a field wants).
func TestParseSetErrors(t *testing.T) {
	m := scenarioModel()
	tests := []struct {
		set, want string
		target    bool // the error is an ErrUnknownTarget
	}{
		{"node.mysql.concurrency=2", "--set node.mysql.concurrency=2: no node mysql (nodes: api, cache, db.primary)", true},
		{"node.db.primry.concurrency=2", "--set node.db.primry.concurrency=2: no node db.primry; did you mean db.primary?", true},
		{"node.cahce.replicas=2", "--set node.cahce.replicas=2: no node cahce; did you mean cache?", true},
		{"entry.db.primary.share=1", "--set entry.db.primary.share=1: no entry db.primary (entries: api)", true},
		{"entry.apii.share=1", "--set entry.apii.share=1: no entry apii; did you mean api?", true},
		{"edge.api->cahce.timeout_ms=1", "--set edge.api->cahce.timeout_ms=1: no node cahce; did you mean cache?", true},
		{"edge.ap->cache.timeout_ms=1", "--set edge.ap->cache.timeout_ms=1: no node ap; did you mean api?", true},
		{"edge.cache->api.timeout_ms=1", "--set edge.cache->api.timeout_ms=1: no edge cache->api; did you mean api->cache?", true},
		{"node.api.concurency=2", "--set node.api.concurency=2: no field concurency in node; did you mean concurrency?", false},
		{"edge.api->db.primary.retry.max_attemps=2", "--set edge.api->db.primary.retry.max_attemps=2: no field max_attemps in retry; did you mean max_attempts?", false},
		{"traffic.rate=5", "--set traffic.rate=5: no field rate in traffic; did you mean rate_per_sec?", false},
		{"node.api.replicas=two", "--set node.api.replicas=two: want an integer", false},
		{"node.api.replicas=1.5", "--set node.api.replicas=1.5: want an integer", false},
		{"edge.api->db.primary.retry.max_attempts=two", "--set edge.api->db.primary.retry.max_attempts=two: want an integer", false},
		{"edge.api->cache.timeout_ms=soon", "--set edge.api->cache.timeout_ms=soon: want a number", false},
		{"node.api.deadline_propagation=3", "--set node.api.deadline_propagation=3: want true or false", false},
		{"node.api.load_balancer=3", "--set node.api.load_balancer=3: want a string", false},
		{"node.api.service_ms=5", "--set node.api.service_ms=5: want an object", false},
		{"node.api.service_ms={kind: exp, mean: x}", "--set node.api.service_ms={kind: exp, mean: x}: service_ms.mean: want a number", false},
		{"node.api.pool=-1", "--set node.api.pool=-1: want a whole number of slots >= 0 (0 or null: unbounded)", false},
		{"nodes.api.concurrency=2", "--set nodes.api.concurrency=2: key must start with node., edge., entry. or traffic.; did you mean node?", false},
		{"node.api.concurrency", "--set node.api.concurrency: want KEY=VALUE", false},
		{"node.api=2", "--set node.api=2: give a field: node.api.FIELD=VALUE", false},
		{"edge.api.timeout_ms=1", "--set edge.api.timeout_ms=1: want edge.FROM->TO.FIELD=VALUE", false},
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			_, err := ParseSet(m, []string{tc.set})
			require.EqualError(t, err, tc.want)
			require.Equal(t, tc.target, errors.Is(err, ErrUnknownTarget))
		})
	}
	// Patterns and removals pass the checks.
	_, err := ParseSet(m, []string{"node.*.replicas=2", "edge.*->cache.retry=null", "node.api.pool=null", "node.api.pool=4"})
	require.NoError(t, err)
}

func TestSeed004Scenarios(t *testing.T) {
	m := loadModel(t, "seed004.json")
	for _, name := range []string{"seed004-random.yaml", "seed004-least-loaded.yaml"} {
		s, err := LoadScenario("../testdata/replay/" + name)
		require.NoError(t, err)
		out, _, err := Apply(m, s)
		require.NoError(t, err)
		require.Equal(t, s.Name, out.Nodes[0].LoadBalancer)
	}
}
