package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// outputFormats are the values of --output (-o) across the commands: a
// value of -o among them is a format wherever -o is given.
var outputFormats = []string{"table", "json", "markdown", "dot", "mermaid"}

// oldOut is how each command spelt its output path before -o became the
// format everywhere, as in kubectl (issue 39): the shorthand, and whether
// it is the path only when its value names no format. The old spellings
// still work, with a warning.
var oldOut = map[string]struct {
	short        byte
	unlessFormat bool
}{
	"graph":   {'o', true},  // graph -o model.json
	"fit":     {'o', true},  // fit -o calibrated.json
	"ingest":  {'O', false}, // ingest -O DATASET
	"collect": {'O', false}, // collect -O DATASET
}

// oldOutSpellings rewrites the old spellings of --out in args, before
// cobra parses them, and warns on stderr for each: -o FILE on graph and
// fit (when FILE names no output format: -o json is the format) and -O
// DIR on ingest and collect become --out. It reads args as pflag does:
// a value that follows a flag taking one is the flag's, not a flag, and
// nothing after "--" is a flag.
func oldOutSpellings(root *cobra.Command, args []string, stderr io.Writer) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Parent() != root {
		return args
	}
	old, ok := oldOut[cmd.Name()]
	if !ok {
		return args
	}
	flags := cmd.Flags()
	takesValue := func(name string, short bool) bool {
		f := flags.Lookup(name)
		if short {
			f = flags.ShorthandLookup(name)
		}
		return f != nil && f.NoOptDefVal == ""
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case strings.HasPrefix(a, "--"):
			out = append(out, a)
			if name, _, inline := strings.Cut(a[2:], "="); !inline && takesValue(name, false) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case len(a) > 1 && a[0] == '-':
			// -o FILE, -oFILE or -o=FILE.
			if a[1] == old.short {
				value, apart := strings.TrimPrefix(a[2:], "="), a == "-"+string(old.short)
				if apart && i+1 < len(args) {
					value = args[i+1]
				}
				if (!apart || i+1 < len(args)) && !(old.unlessFormat && slices.Contains(outputFormats, value)) {
					why := ""
					if old.short == 'o' {
						why = " (-o now names the output format)"
					}
					fmt.Fprintf(stderr, "cascade: warning: -%c %s is deprecated, use --out %s%s\n", old.short, value, value, why)
					out = append(out, "--out="+value)
					if apart {
						i++
					}
					continue
				}
			}
			out = append(out, a)
			if len(a) == 2 && takesValue(a[1:], true) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		default:
			out = append(out, a)
		}
	}
	return out
}
