package drain

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParser(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		lines []string
		ids   []int    // the cluster of each line
		tmpls []string // the templates by id, after every line
	}{
		{
			// The lines of Drain3's README example, without its masking
			// (which would give "connected to <:IP:>").
			name: "drain3 readme",
			lines: []string{
				"connected to 10.0.0.1",
				"connected to 192.168.0.1",
				"Hex number 0xDEADBEAF",
				"user davidoh logged in",
				"user eranr logged in",
			},
			ids:   []int{1, 1, 2, 3, 3},
			tmpls: []string{"connected to <*>", "Hex number 0xDEADBEAF", "user <*> logged in"},
		},
		{
			// HDFS lines as in the paper's evaluation (LogHub's HDFS
			// sample): block ids and addresses become wildcards.
			name: "hdfs",
			lines: []string{
				"Receiving block blk_-1608999687919862906 src: /10.250.19.102:54106 dest: /10.250.19.102:50010",
				"PacketResponder 1 for block blk_38865049064139660 terminating",
				"Receiving block blk_7503483334202473044 src: /10.251.215.16:55695 dest: /10.251.215.16:50010",
				"PacketResponder 0 for block blk_-6952295868487656571 terminating",
				"Verification succeeded for blk_-4980916519894289629",
				"Verification succeeded for blk_-1608999687919862906",
			},
			ids: []int{1, 2, 1, 2, 3, 3},
			tmpls: []string{
				"Receiving block <*> src: <*> dest: <*>",
				"PacketResponder <*> for block <*> terminating",
				"Verification succeeded for <*>",
			},
		},
		{
			// Below the threshold a message starts its own cluster: one of
			// four tokens in common is 0.25 < 0.4.
			name:  "threshold",
			lines: []string{"open file a b", "open socket c d"},
			ids:   []int{1, 2},
			tmpls: []string{"open file a b", "open socket c d"},
		},
		{
			name:  "threshold lowered",
			cfg:   Config{SimThreshold: 0.25},
			lines: []string{"open file a b", "open socket c d"},
			ids:   []int{1, 1},
			tmpls: []string{"open <*> <*> <*>"},
		},
		{
			// Token counts never mix; an empty message has its own cluster.
			name:  "lengths",
			lines: []string{"a b", "a b c", "", "  ", "a  b"},
			ids:   []int{1, 2, 3, 3, 1},
			tmpls: []string{"a b", "a b c", ""},
		},
		{
			// A first token with a digit routes to the wildcard child, so
			// messages that differ only there still meet.
			name:  "digit route",
			lines: []string{"42 apples eaten", "7 apples eaten"},
			ids:   []int{1, 1},
			tmpls: []string{"<*> apples eaten"},
		},
		{
			// Depth 5 routes by two tokens: the second token parts them.
			name:  "depth",
			cfg:   Config{Depth: 5},
			lines: []string{"get user a b c", "get order a b c", "get user x b c"},
			ids:   []int{1, 2, 1},
			tmpls: []string{"get user <*> b c", "get order a b c"},
		},
		{
			// Once a node holds MaxChildren children, new tokens share
			// the wildcard child.
			name:  "max children",
			cfg:   Config{MaxChildren: 2},
			lines: []string{"alpha x y", "beta x y", "gamma x y"},
			ids:   []int{1, 2, 2},
			tmpls: []string{"alpha x y", "<*> x y"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.cfg)
			var ids []int
			for _, l := range tc.lines {
				ids = append(ids, p.Add(l))
			}
			require.Equal(t, tc.ids, ids)
			var tmpls []string
			for id := 1; id <= p.Len(); id++ {
				tmpls = append(tmpls, p.Template(id))
			}
			require.Equal(t, tc.tmpls, tmpls)
		})
	}
}

func TestParserSizeAndUnknownID(t *testing.T) {
	p := New(Config{})
	p.Add("a 1")
	p.Add("a 2")
	require.Equal(t, int64(2), p.Size(1))
	require.Equal(t, int64(0), p.Size(2))
	require.Equal(t, "", p.Template(0))
	require.Equal(t, "", p.Template(2))
}

func TestConfigValidate(t *testing.T) {
	c := Config{Depth: 2, SimThreshold: 1.5, MaxChildren: 1}
	require.EqualError(t, c.Validate(),
		"depth: 2 is below 3\nsim-threshold: 1.5 is outside (0, 1]\nmax-children: 1 is below 2")
	d := DefaultConfig()
	require.NoError(t, d.Validate())
	require.Panics(t, func() { New(c) })
}

// TestParserDeterministic feeds the same messages twice and expects the
// same ids and templates.
func TestParserDeterministic(t *testing.T) {
	run := func() []string {
		p := New(Config{})
		var out []string
		for i := range 500 {
			id := p.Add(fmt.Sprintf("svc%d op %d took %dms status %d", i%7, i%13, i*37%101, i%3))
			out = append(out, fmt.Sprint(id, p.Template(id)))
		}
		return out
	}
	require.Equal(t, run(), run())
}

func ExampleParser() {
	p := New(DefaultConfig())
	for _, l := range []string{
		"connected to 10.0.0.1",
		"connected to 192.168.0.1",
		"user davidoh logged in",
		"user eranr logged in",
	} {
		p.Add(l)
	}
	for id := 1; id <= p.Len(); id++ {
		fmt.Printf("%d %d %s\n", id, p.Size(id), p.Template(id))
	}
	// Output:
	// 1 2 connected to <*>
	// 2 2 user <*> logged in
}
