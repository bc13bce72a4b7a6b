package rank

import (
	"encoding/json"
	"sort"
	"strings"

	"cascade"
)

// fieldsOf lists the fields a scenario patches, as "node:NAME/FIELD",
// "edge:FROM->TO/FIELD" and "entry:NAME/FIELD" (nested objects add
// ".FIELD"), sorted.
func fieldsOf(s *cascade.Scenario) []string {
	var out []string
	add := func(kind string, m map[string]json.RawMessage) {
		for key, p := range m {
			var v any
			if json.Unmarshal(p, &v) != nil {
				out = append(out, kind+":"+key+"/")
				continue
			}
			for _, f := range leafFields(v, "") {
				out = append(out, kind+":"+key+"/"+f)
			}
		}
	}
	add("node", s.Nodes)
	add("edge", s.Edges)
	add("entry", s.Entries)
	sort.Strings(out)
	return out
}

// leafFields names the fields a patch sets: nested objects down to the
// retry policy's and a message queue's parts (retry.max_attempts,
// retry.backoff, queue.max_length), whole objects elsewhere, so that a
// delay queue and a cap on one queue are compatible.
func leafFields(v any, prefix string) []string {
	m, ok := v.(map[string]any)
	if !ok || (prefix != "" && prefix != "retry." && prefix != "queue.") {
		return []string{strings.TrimSuffix(prefix, ".")}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if (k == "retry" || k == "queue") && prefix == "" {
			if _, ok := m[k].(map[string]any); ok {
				out = append(out, leafFields(m[k], k+".")...)
				continue
			}
		}
		out = append(out, prefix+k)
	}
	return out
}

// conflict reports whether two field names patch the same field of the
// same object ("*" matches any name, on either side of an edge).
func conflict(a, b string) bool {
	ka, ta, fa := splitField(a)
	kb, tb, fb := splitField(b)
	if ka != kb {
		return false
	}
	if !(fa == fb || strings.HasPrefix(fa, fb+".") || strings.HasPrefix(fb, fa+".") ||
		fa == "retry" && strings.HasPrefix(fb, "retry") || fb == "retry" && strings.HasPrefix(fa, "retry")) {
		return false
	}
	if ka == "edge" {
		af, at, _ := strings.Cut(ta, "->")
		bf, bt, _ := strings.Cut(tb, "->")
		return matches(af, bf) && matches(at, bt)
	}
	return matches(ta, tb)
}

func matches(a, b string) bool { return a == b || a == "*" || b == "*" }

func splitField(s string) (kind, target, field string) {
	kind, rest, _ := strings.Cut(s, ":")
	i := strings.LastIndex(rest, "/")
	if i < 0 {
		return kind, rest, ""
	}
	return kind, rest[:i], rest[i+1:]
}

// compatible reports whether two candidates patch no field in common.
func compatible(a, b *Candidate) bool {
	for _, x := range a.Fields {
		for _, y := range b.Fields {
			if conflict(x, y) {
				return false
			}
		}
	}
	return true
}
