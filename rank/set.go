package rank

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"cascade"
	"cascade/replay"
)

// Set is the best compatible set: ranked wins that patch different
// fields, added greedily in rank order while each addition keeps
// improving the objective.
type Set struct {
	// Members name the candidates in the set, in the order they joined.
	Members []string `json:"members"`
	// Row scores the set against the baseline like a candidate.
	Row Row `json:"row"`
	// Tried lists the wins considered after the first, and what became
	// of each.
	Tried []SetStep `json:"tried,omitempty"`
}

// SetStep is one win considered for the set.
type SetStep struct {
	// Name is the candidate's.
	Name string `json:"name"`
	// Joined reports whether it joined the set.
	Joined bool `json:"joined"`
	// Gain is the mean objective gain of the set with it over the set
	// without it (paired by seed); 0 when not tried.
	Gain float64 `json:"gain"`
	// Reason says why it joined or not.
	Reason string `json:"reason"`
}

// bestSet starts from the top win and tries each next win (up to
// Config.MaxSet) that patches no field of a member: it joins when the
// set with it beats the set without it on the mean of the paired
// objective differences. runs[i] are rows[i]'s replays.
func bestSet(ctx context.Context, rn *replay.Batch, base *cascade.Model, cfg Config, floor float64, regimes []Regime,
	bres [][]*replay.Result, rows []Row, runs [][][]*replay.Result) (*Set, error) {
	var wins []int
	for i := range rows {
		if rows[i].Verdict == Win && !productChange(&rows[i].Candidate) {
			wins = append(wins, i)
		}
	}
	if len(wins) == 0 {
		return nil, nil
	}
	set := &Set{Members: []string{rows[wins[0]].Candidate.Name}}
	members := []*Candidate{&rows[wins[0]].Candidate}
	cur := runs[wins[0]]
	for _, w := range wins[1:min(len(wins), cfg.MaxSet+1)] {
		c := &rows[w].Candidate
		step := SetStep{Name: c.Name}
		for _, m := range members {
			if !compatible(m, c) {
				step.Reason = "patches a field " + m.Name + " patches"
				break
			}
		}
		if step.Reason != "" {
			set.Tried = append(set.Tried, step)
			continue
		}
		scens := make([]*cascade.Scenario, 0, len(members)+1)
		for _, m := range members {
			scens = append(scens, m.Scenario)
		}
		scens = append(scens, c.Scenario)
		sm, _, err := replay.Apply(base, scens...)
		if err != nil {
			step.Reason = "does not apply with the set: " + err.Error()
			set.Tried = append(set.Tried, step)
			continue
		}
		res, err := runOne(ctx, rn, sm, regimes)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			step.Reason = "replay failed: " + err.Error()
			set.Tried = append(set.Tried, step)
			continue
		}
		iv := tInterval(objectiveDiffs(cfg.Objective, cur, res))
		_, step.Gain = judge(cfg.Objective, iv, 0)
		if step.Gain > 0 {
			step.Joined = true
			step.Reason = "improves the set"
			members = append(members, c)
			set.Members = append(set.Members, c.Name)
			cur = res
		} else {
			step.Reason = "does not improve the set"
		}
		set.Tried = append(set.Tried, step)
	}
	if len(members) == 1 {
		set.Row = rows[wins[0]]
		return set, nil
	}
	descs := make([]string, len(members))
	var fields []string
	scens := make([]*cascade.Scenario, len(members))
	for i, m := range members {
		descs[i] = m.Description
		fields = append(fields, m.Fields...)
		scens[i] = m.Scenario
	}
	sort.Strings(fields)
	c := Candidate{
		Name:        "set of " + fmt.Sprint(len(members)),
		Description: strings.Join(descs, "; "),
		Kind:        "set",
		Fields:      fields,
		Scenario:    mergeScenarios(scens),
	}
	c.Scenario.Name, c.Scenario.Description = c.Name, c.Description
	set.Row = score(base, cfg.Objective, floor, regimes, c, bres, cur, nil)
	if set.Row.Verdict == Win {
		set.Row.Rank = 1
	}
	return set, nil
}

// mergeScenarios merges compatible scenarios' patches into one.
func mergeScenarios(ss []*cascade.Scenario) *cascade.Scenario {
	out := &cascade.Scenario{}
	merge := func(dst *map[string]json.RawMessage, src map[string]json.RawMessage) {
		for k, p := range src {
			if *dst == nil {
				*dst = map[string]json.RawMessage{}
			}
			var a, b any
			if prev, ok := (*dst)[k]; ok {
				_ = json.Unmarshal(prev, &a)
			}
			_ = json.Unmarshal(p, &b)
			(*dst)[k] = replay.RawPatch(mergeJSON(a, b))
		}
	}
	for _, s := range ss {
		merge(&out.Nodes, s.Nodes)
		merge(&out.Edges, s.Edges)
		merge(&out.Entries, s.Entries)
	}
	return out
}

// mergeJSON merges two merge patches into one (objects key by key).
func mergeJSON(a, b any) any {
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return b
	}
	for k, v := range bm {
		am[k] = mergeJSON(am[k], v)
	}
	return am
}
