package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"cascade"
)

// ErrUnknownTarget is returned when a scenario or a --set names a node,
// edge or entry that the model does not have.
var ErrUnknownTarget = errors.New("no such node, edge or entry in the model")

// LoadScenario reads a scenario file (YAML or JSON) strictly: unknown
// fields are errors.
func LoadScenario(path string) (*cascade.Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseScenario(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScenario decodes a scenario document (YAML or JSON) strictly.
func ParseScenario(b []byte) (*cascade.Scenario, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	var s cascade.Scenario
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if s.Traffic != nil {
		if err := validateTraffic(s.Traffic); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// ParseSet turns --set assignments into a scenario. Keys are
//
//	node.NAME.FIELD[.FIELD…]=VALUE      (NAME may be "*")
//	edge.FROM->TO.FIELD[.FIELD…]=VALUE  (either side may be "*")
//	entry.NAME.FIELD[.FIELD…]=VALUE
//	traffic.FIELD=VALUE
//
// with field names as in model.json (and the scenario's traffic). VALUE
// is a YAML value: 3, true, exp, {kind: exp, mean: 10}, or null to
// remove a field. Node names may contain dots: the longest name of the
// model that matches wins.
func ParseSet(m *cascade.Model, sets []string) (*cascade.Scenario, error) {
	s := &cascade.Scenario{}
	var traffic map[string]any
	names := make([]string, 0, len(m.Nodes)+1)
	for i := range m.Nodes {
		names = append(names, m.Nodes[i].Name)
	}
	entries := make([]string, 0, len(m.Entries)+1)
	for i := range m.Entries {
		entries = append(entries, m.Entries[i].Node)
	}
	names, entries = append(names, "*"), append(entries, "*")
	// Longest first, so "a.b" wins over "a".
	longestFirst := func(ns []string) {
		sort.SliceStable(ns, func(i, j int) bool { return len(ns[i]) > len(ns[j]) })
	}
	longestFirst(names)
	longestFirst(entries)
	for _, kv := range sets {
		key, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--set %s: want KEY=VALUE", kv)
		}
		jv, err := yaml.YAMLToJSON([]byte(val))
		if err != nil {
			return nil, fmt.Errorf("--set %s: value: %w", kv, err)
		}
		var v any
		if err := json.Unmarshal(jv, &v); err != nil {
			return nil, fmt.Errorf("--set %s: value: %w", kv, err)
		}
		kind, rest, _ := strings.Cut(key, ".")
		target, path, err := setTarget(m, kind, rest, names, entries)
		if err != nil {
			return nil, fmt.Errorf("--set %s: %w", kv, err)
		}
		patch := nest(strings.Split(path, "."), v)
		if fe := checkPatch(setDocs[kind], patch, kind); fe != nil {
			return nil, fmt.Errorf("--set %s: %s", kv, fe.text(strings.Count(path, ".")+1))
		}
		var dst *map[string]json.RawMessage
		switch kind {
		case "node":
			dst = &s.Nodes
		case "edge":
			dst = &s.Edges
		case "entry":
			dst = &s.Entries
		case "traffic":
			if traffic == nil {
				traffic = map[string]any{}
			}
			mergeInto(traffic, patch)
			continue
		}
		if *dst == nil {
			*dst = map[string]json.RawMessage{}
		}
		var prev any = map[string]any{}
		if raw, ok := (*dst)[target]; ok {
			_ = json.Unmarshal(raw, &prev)
		}
		merged := mergePatchKeepNull(prev, patch)
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, err
		}
		(*dst)[target] = b
	}
	if traffic != nil {
		b, _ := json.Marshal(traffic)
		var t cascade.Traffic
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("--set traffic: %w", err)
		}
		s.Traffic = &t
	}
	return s, nil
}

// setDocs are the documents a --set key of each kind patches.
var setDocs = map[string]reflect.Type{
	"node":    reflect.TypeOf(cascade.Node{}),
	"edge":    reflect.TypeOf(cascade.Edge{}),
	"entry":   reflect.TypeOf(cascade.Entry{}),
	"traffic": reflect.TypeOf(cascade.Traffic{}),
}

// targetError is a --set or scenario key naming no node, edge or entry
// of the model, with the names near it.
type targetError struct{ msg string }

func (e *targetError) Error() string { return e.msg }

// Is makes the error an ErrUnknownTarget.
func (e *targetError) Is(target error) bool { return target == ErrUnknownTarget }

// setTarget splits the part of a --set key after its kind ("node",
// "edge", "entry", "traffic") into the scenario key it patches and the
// field path. names and entries are the model's node and entry names
// (with "*"), longest first.
func setTarget(m *cascade.Model, kind, rest string, names, entries []string) (target, path string, err error) {
	noField := fmt.Errorf("give a field: %s.%s.FIELD=VALUE", kind, strings.TrimSuffix(rest, "."))
	switch kind {
	case "node", "entry":
		ns, plural := names, "nodes"
		if kind == "entry" {
			ns, plural = entries, "entries"
		}
		if target, path = matchName(rest, ns); target != "" {
			if path == "" {
				return "", "", noField
			}
			return target, path, nil
		}
		if slices.Contains(ns, rest) {
			return "", "", noField
		}
		name, _ := splitUnknown(rest, ns)
		if n, _ := matchName(rest, names); kind == "entry" && n != "" {
			name = n // a node that is no entry
		}
		return "", "", &targetError{fmt.Sprintf("no %s %s%s", kind, name, hint(name, ns, plural, 10))}
	case "edge":
		from, tail, ok := strings.Cut(rest, "->")
		if !ok {
			return "", "", errors.New("want edge.FROM->TO.FIELD=VALUE")
		}
		if !slices.Contains(names, from) && !strings.ContainsAny(from, "*?[") {
			return "", "", &targetError{fmt.Sprintf("no node %s%s", from, hint(from, names, "nodes", 10))}
		}
		to, path := matchName(tail, names)
		if to != "" && path == "" {
			return "", "", fmt.Errorf("give a field: edge.%s.FIELD=VALUE", strings.TrimSuffix(rest, "."))
		}
		if to == "" {
			if slices.Contains(names, tail) {
				return "", "", fmt.Errorf("give a field: edge.%s.FIELD=VALUE", rest)
			}
			name, _ := splitUnknown(tail, names)
			return "", "", &targetError{fmt.Sprintf("no node %s%s", name, hint(name, names, "nodes", 10))}
		}
		target = from + "->" + to
		if !strings.ContainsAny(target, "*?[") && !hasEdge(m, from, to) {
			edges := make([]string, len(m.Edges))
			for i, e := range m.Edges {
				edges[i] = e.From + "->" + e.To
			}
			h := hint(target, edges, "edges", 10)
			if hasEdge(m, to, from) {
				h = "; did you mean " + to + "->" + from + "?"
			}
			return "", "", &targetError{fmt.Sprintf("no edge %s%s", target, h)}
		}
		return target, path, nil
	case "traffic":
		if rest == "" {
			return "", "", errors.New("give a field: traffic.FIELD=VALUE")
		}
		return "traffic", rest, nil
	}
	msg := "key must start with node., edge., entry. or traffic."
	if near := nearNames(kind, []string{"node", "edge", "entry", "traffic"}); len(near) > 0 {
		msg += "; did you mean " + near[0] + "?"
	}
	return "", "", errors.New(msg)
}

// hasEdge reports whether the model has an edge from -> to.
func hasEdge(m *cascade.Model, from, to string) bool {
	for i := range m.Edges {
		if m.Edges[i].From == from && m.Edges[i].To == to {
			return true
		}
	}
	return false
}

// matchName splits "NAME.PATH" at the longest known name, else at the
// end of a pattern ("stock:*.service_ms.scale": the first dot after the
// pattern's first *, ? or [).
func matchName(s string, names []string) (name, path string) {
	for _, n := range names {
		if strings.HasPrefix(s, n+".") {
			return n, s[len(n)+1:]
		}
	}
	if i := strings.IndexAny(s, "*?["); i >= 0 {
		if j := strings.IndexByte(s[i:], '.'); j > 0 {
			return s[:i+j], s[i+j+1:]
		}
	}
	return "", ""
}

func nest(path []string, v any) map[string]any {
	m := map[string]any{path[len(path)-1]: v}
	for i := len(path) - 2; i >= 0; i-- {
		m = map[string]any{path[i]: m}
	}
	return m
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// mergePatch applies an RFC 7386 JSON merge patch to target: objects
// merge key by key, null removes a key, anything else replaces.
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergePatch(tm[k], v)
	}
	return tm
}

// mergePatchKeepNull merges two patches into one: like mergePatch, but
// a null stays in the result, to remove the field when applied.
func mergePatchKeepNull(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		tm[k] = mergePatchKeepNull(tm[k], v)
	}
	return tm
}

// Apply returns a copy of the model with the scenarios' patches applied,
// in order, and the traffic of the last scenario that sets one (nil when
// none does). Within a scenario, "*" patches apply before named ones
// (for edges: "*->*", then "FROM->*" and "*->TO", then "FROM->TO"). A
// key that matches nothing is an error, and so is a patched model that
// does not validate.
func Apply(m *cascade.Model, scenarios ...*cascade.Scenario) (*cascade.Model, *cascade.Traffic, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	out := &cascade.Model{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, nil, err
	}
	var traffic *cascade.Traffic
	for _, s := range scenarios {
		if s == nil {
			continue
		}
		if s.Traffic != nil {
			t, err := mergeTraffic(traffic, s.Traffic)
			if err != nil {
				return nil, nil, err
			}
			traffic = t
		}
		if err := applyOne(out, s); err != nil {
			return nil, nil, err
		}
	}
	if err := out.Validate(); err != nil {
		return nil, nil, fmt.Errorf("scenario: %w", err)
	}
	return out, traffic, nil
}

func applyOne(m *cascade.Model, s *cascade.Scenario) error {
	var errs []error
	var nodes, edges, entries []string
	for i := range m.Nodes {
		nodes = append(nodes, m.Nodes[i].Name)
	}
	for i := range m.Edges {
		edges = append(edges, m.Edges[i].From+"->"+m.Edges[i].To)
	}
	for i := range m.Entries {
		entries = append(entries, m.Entries[i].Node)
	}
	// Nodes.
	for _, key := range orderedKeys(s.Nodes, nameRank) {
		hit := false
		if fe := checkRaw(setDocs["node"], s.Nodes[key], "node"); fe != nil {
			errs = append(errs, fmt.Errorf("nodes[%q]: %s", key, fe.text(0)))
			continue
		}
		patch, pool, err := takePool(s.Nodes[key])
		if err != nil {
			errs = append(errs, fmt.Errorf("nodes[%q]: %w", key, err))
			continue
		}
		for i := range m.Nodes {
			if matches(key, m.Nodes[i].Name) {
				hit = true
				if err := patchValue(&m.Nodes[i], patch); err != nil {
					errs = append(errs, fmt.Errorf("nodes[%q]: %w", key, err))
				}
				if pool >= 0 {
					setPool(m, i, pool)
				}
			}
		}
		if !hit {
			errs = append(errs, fmt.Errorf("nodes[%q]: %w%s", key, ErrUnknownTarget, hint(key, nodes, "nodes", 10)))
		}
	}
	// Edges.
	for _, key := range orderedKeys(s.Edges, func(k string) int {
		from, to, _ := strings.Cut(k, "->")
		return nameRank(from) + nameRank(to)
	}) {
		from, to, ok := strings.Cut(key, "->")
		if !ok {
			errs = append(errs, fmt.Errorf("edges[%q]: want FROM->TO", key))
			continue
		}
		if fe := checkRaw(setDocs["edge"], s.Edges[key], "edge"); fe != nil {
			errs = append(errs, fmt.Errorf("edges[%q]: %s", key, fe.text(0)))
			continue
		}
		hit := false
		for i := range m.Edges {
			e := &m.Edges[i]
			if matches(from, e.From) && matches(to, e.To) {
				hit = true
				if err := patchValue(e, s.Edges[key]); err != nil {
					errs = append(errs, fmt.Errorf("edges[%q]: %w", key, err))
				}
			}
		}
		if !hit {
			errs = append(errs, fmt.Errorf("edges[%q]: %w%s", key, ErrUnknownTarget, hint(key, edges, "edges", 10)))
		}
	}
	// Entries.
	for _, key := range orderedKeys(s.Entries, nameRank) {
		hit := false
		if fe := checkRaw(setDocs["entry"], s.Entries[key], "entry"); fe != nil {
			errs = append(errs, fmt.Errorf("entries[%q]: %s", key, fe.text(0)))
			continue
		}
		for i := range m.Entries {
			if matches(key, m.Entries[i].Node) {
				hit = true
				if err := patchValue(&m.Entries[i], s.Entries[key]); err != nil {
					errs = append(errs, fmt.Errorf("entries[%q]: %w", key, err))
				}
			}
		}
		if !hit {
			errs = append(errs, fmt.Errorf("entries[%q]: %w%s", key, ErrUnknownTarget, hint(key, entries, "entries", 10)))
		}
	}
	return errors.Join(errs...)
}

// matches reports whether a scenario key names name: the name itself, or
// a pattern with *, ? or [...] (path.Match syntax: "stock:*" is every
// operation of stock in an operation-level model).
func matches(key, name string) bool {
	if key == name {
		return true
	}
	if !strings.ContainsAny(key, "*?[") {
		return false
	}
	ok, err := path.Match(key, name)
	return ok && err == nil
}

// nameRank orders keys: "*" first, then other patterns, then names.
func nameRank(k string) int {
	switch {
	case k == "*":
		return 0
	case strings.ContainsAny(k, "*?["):
		return 1
	}
	return 2
}

// takePool takes the "pool" knob out of a node patch: the size of the
// pool the node's work waits in (see setPool), or 0 (or null) for none.
// pool is -1 when the patch does not set it.
func takePool(raw json.RawMessage) (json.RawMessage, int, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, -1, errors.New("a patch must be an object")
	}
	v, ok := p["pool"]
	if !ok {
		return raw, -1, nil
	}
	delete(p, "pool")
	n := 0
	if string(v) != "null" {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return nil, -1, fmt.Errorf("pool: want a whole number of slots >= 0 (0 or null: unbounded), got %s", v)
		}
		n = int(f)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, -1, err
	}
	return b, n, nil
}

// setPool sets the pool of node i to n slots where the model keeps it: a
// caller's shared pool for its calls into the node (the edge's
// parallelism with shared_pool, HotROD's frontend→route workers) when
// there is one, else the node's own concurrency per replica. One knob
// then changes the limit the work really waits in, and never leaves a
// second copy of it behind.
func setPool(m *cascade.Model, i, n int) {
	name := m.Nodes[i].Name
	shared := false
	for k := range m.Edges {
		if e := &m.Edges[k]; e.To == name && e.SharedPool {
			e.Parallelism = n
			shared = true
		}
	}
	if !shared {
		m.Nodes[i].Concurrency = n
	}
}

// orderedKeys sorts keys by rank, then by name.
func orderedKeys(m map[string]json.RawMessage, rank func(string) int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank(keys[i]), rank(keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// patchValue merge-patches *v (a node, edge or entry) through its JSON
// and decodes the result strictly.
func patchValue[T any](v *T, patch json.RawMessage) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var doc, p any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	if _, ok := p.(map[string]any); !ok {
		return errors.New("a patch must be an object")
	}
	merged, err := json.Marshal(mergePatch(doc, p))
	if err != nil {
		return err
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(merged))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return err
	}
	*v = out
	return nil
}

// mergeTraffic merge-patches the fields set in patch over base (nil
// means none).
func mergeTraffic(base, patch *cascade.Traffic) (*cascade.Traffic, error) {
	if base == nil {
		t := *patch
		return &t, nil
	}
	t := *base
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	if err := patchValue(&t, b); err != nil {
		return nil, fmt.Errorf("traffic: %w", err)
	}
	return &t, nil
}
