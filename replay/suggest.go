package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"cascade"
)

// A --set or scenario key that names nothing is answered with the names
// it was near ("no node mysqll; did you mean mysql?"), and a value of the
// wrong type with the type the field wants, in the user's words rather
// than encoding/json's.

// editDistance is the optimal string alignment distance between a and b,
// in runes: the insertions, deletions, substitutions and transpositions
// of two adjacent runes that turn one into the other ("cahce" is 1 from
// "cache").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// nearNames returns up to three of names near name: within an edit
// distance of a third of its length (at least 1, at most 3), or starting
// with it, or with it after a "_", "-", "." or ":" ("rate" is near
// rate_per_sec, "attempts" near max_attempts) when it has three
// characters or more; nearest first, then by name. "*" is never
// suggested.
func nearNames(name string, names []string) []string {
	type near struct {
		name string
		d    int
	}
	limit := min(max(len([]rune(name))/3, 1), 3)
	lower := strings.ToLower(name)
	var found []near
	for _, n := range names {
		if n == "*" || n == name {
			continue
		}
		d := editDistance(lower, strings.ToLower(n))
		if d <= limit || len(lower) >= 3 && startsWord(strings.ToLower(n), lower) {
			found = append(found, near{n, d})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].name < found[j].name
	})
	var out []string
	for i := 0; i < len(found) && i < 3; i++ {
		out = append(out, found[i].name)
	}
	return out
}

// startsWord reports whether a word of s (s itself, or what follows a
// "_", "-", "." or ":" in it) starts with w.
func startsWord(s, w string) bool {
	for {
		if strings.HasPrefix(s, w) {
			return true
		}
		i := strings.IndexAny(s, "_-.:")
		if i < 0 {
			return false
		}
		s = s[i+1:]
	}
}

// hint is what follows "no node X": "; did you mean Y?" when a name is
// near, else the names there are (what, plural: "nodes"), up to limit
// of them (0: all).
func hint(name string, names []string, what string, limit int) string {
	if near := nearNames(name, names); len(near) > 0 {
		return "; did you mean " + orList(near) + "?"
	}
	var all []string
	for _, n := range names {
		if n != "*" {
			all = append(all, n)
		}
	}
	if len(all) == 0 {
		return " (the model has no " + what + ")"
	}
	sort.Strings(all)
	more := ""
	if limit > 0 && len(all) > limit {
		more = fmt.Sprintf(" and %d more", len(all)-limit)
		all = all[:limit]
	}
	return " (" + what + ": " + strings.Join(all, ", ") + more + ")"
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// splitUnknown splits "NAME.PATH", whose NAME is no name of the model,
// where the name part is nearest a known name (names may hold dots), so
// that the error names what the user meant as the name. Without a dot
// it is all name.
func splitUnknown(s string, names []string) (name, path string) {
	best := math.MaxInt
	name, path = s, ""
	for i := 0; i < len(s); i++ {
		if s[i] != '.' || i == 0 || i == len(s)-1 {
			continue
		}
		d := math.MaxInt
		for _, n := range names {
			d = min(d, editDistance(s[:i], n))
		}
		if d < best {
			best, name, path = d, s[:i], s[i+1:]
		}
	}
	return name, path
}

// fieldError is a patch field that does not exist, or a value of the
// wrong type, at a path of JSON keys.
type fieldError struct {
	path []string
	msg  string
}

// checkPatch checks a merge patch v (decoded JSON) against the document
// type t (cascade.Node, Edge, Entry, Traffic): every key must name a
// field, and every value other than null must have the field's type. what
// names the document ("node") in the error. A node patch may also set
// the pool knob (see takePool).
func checkPatch(t reflect.Type, v any, what string) *fieldError {
	m, ok := v.(map[string]any)
	if !ok {
		return &fieldError{msg: "want an object"}
	}
	var extra []string
	if t == reflect.TypeOf(cascade.Node{}) {
		extra = []string{"pool"}
		if p := m["pool"]; p != nil {
			if f, ok := p.(float64); !ok || f < 0 || f != math.Trunc(f) {
				return &fieldError{path: []string{"pool"}, msg: "want a whole number of slots >= 0 (0 or null: unbounded)"}
			}
		}
	}
	return checkObject(t, m, what, nil, extra)
}

// checkRaw is checkPatch on a scenario's patch as written; a patch that
// is not JSON is left to the patching to report.
func checkRaw(t reflect.Type, raw json.RawMessage, what string) *fieldError {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return checkPatch(t, v, what)
}

// text renders the error for a key whose own path is depth fields long:
// a wrong type names the field when it lies deeper than the key.
func (e *fieldError) text(depth int) string {
	if strings.HasPrefix(e.msg, "want") && len(e.path) > depth {
		return strings.Join(e.path, ".") + ": " + e.msg
	}
	return e.msg
}

// checkObject checks the keys of m against the struct type t; extra are
// keys handled elsewhere, accepted as they are.
func checkObject(t reflect.Type, m map[string]any, what string, path, extra []string) *fieldError {
	fields := jsonFields(t)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(extra, k) {
			continue
		}
		p := append(append([]string(nil), path...), k)
		ft, ok := fields[k]
		if !ok {
			names := append([]string(nil), extra...)
			for n := range fields {
				names = append(names, n)
			}
			return &fieldError{path: p, msg: fmt.Sprintf("no field %s in %s%s", k, what, hint(k, names, "its fields", 0))}
		}
		if err := checkValue(ft, m[k], k, p); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields maps the JSON names of struct type t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// checkValue checks that v (decoded JSON; nil removes the field) fits a
// field of type t named what.
func checkValue(t reflect.Type, v any, what string, path []string) *fieldError {
	if v == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := ""
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if f, ok := v.(float64); !ok || f != math.Trunc(f) {
			want = "an integer"
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f, ok := v.(float64); !ok || f != math.Trunc(f) || f < 0 {
			want = "a whole number >= 0"
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(float64); !ok {
			want = "a number"
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			want = "true or false"
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			want = "a string"
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // json.RawMessage: anything
			return nil
		}
		l, ok := v.([]any)
		if !ok {
			want = "a list"
			break
		}
		for i, x := range l {
			if err := checkValue(t.Elem(), x, what, append(append([]string(nil), path...), fmt.Sprint(i))); err != nil {
				return err
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			want = "an object"
			break
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := checkValue(t.Elem(), m[k], k, append(append([]string(nil), path...), k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			want = "an object"
			break
		}
		return checkObject(t, m, what, path, nil)
	}
	if want != "" {
		return &fieldError{path: path, msg: "want " + want}
	}
	return nil
}
