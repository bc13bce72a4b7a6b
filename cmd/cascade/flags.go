package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// flagError is the commands' flag error func: every flag error is a
// usage error (exit 2), a value that does not parse says what the flag
// wants, not what strconv or time said, and an unknown flag is answered
// with the command's flags nearest to it, as cobra answers an unknown
// command.
func flagError(cmd *cobra.Command, err error) error {
	if ve := (*pflag.InvalidValueError)(nil); errors.As(err, &ve) {
		return usageError{badValue(ve.GetFlag(), ve.GetValue(), errors.Unwrap(ve))}
	}
	if ne := (*pflag.NotExistError)(nil); errors.As(err, &ne) {
		typed := ne.GetSpecifiedName()
		if sh := ne.GetSpecifiedShortnames(); len(sh) > 1 {
			typed = sh // -seed: a long name with one dash
		} else if sh != "" {
			typed = ""
		}
		if near := nearFlags(cmd, typed); len(near) > 0 {
			err = fmt.Errorf("%w; did you mean %s?", err, orList(near))
		}
	}
	return usageError{err}
}

// unknownCommand rewrites cobra's error for an unknown command as a
// usage error with its suggestions on the same line, or returns err.
func unknownCommand(root *cobra.Command, err error) error {
	var name string
	if _, serr := fmt.Sscanf(err.Error(), "unknown command %q for ", &name); serr != nil {
		return err
	}
	if near := root.SuggestionsFor(name); len(near) > 0 {
		return usageError{fmt.Errorf("unknown command %q; did you mean %s?", name, orList(near))}
	}
	return usageError{fmt.Errorf("unknown command %q (see cascade --help)", name)}
}

// nearFlags returns the flags of cmd whose names are within two edits of
// typed (one for a name of three letters or fewer), or begin with it, or
// that it begins with: --levl gives --level, --met --metrics, --outdir
// --out. The nearest come first, at most three; a name typed exactly
// (-seed for --seed) is the only one.
func nearFlags(cmd *cobra.Command, typed string) []string {
	typed = strings.ToLower(typed)
	if len(typed) < 2 {
		return nil
	}
	maxEdits := 2
	if len(typed) <= 3 {
		maxEdits = 1
	}
	type near struct {
		name  string
		edits int
	}
	var found []near
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		d := editDistance(typed, strings.ToLower(f.Name))
		if d <= maxEdits || strings.HasPrefix(f.Name, typed) || (len(f.Name) >= 3 && strings.HasPrefix(typed, f.Name)) {
			found = append(found, near{f.Name, d})
		}
	})
	slices.SortFunc(found, func(a, b near) int {
		if a.edits != b.edits {
			return a.edits - b.edits
		}
		return strings.Compare(a.name, b.name)
	})
	if len(found) > 0 && found[0].edits == 0 {
		found = found[:1] // -seed: --seed, given with one dash
	}
	var names []string
	for _, n := range found[:min(len(found), 3)] {
		names = append(names, "--"+n.name)
	}
	return names
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// badValue says what is wrong with a flag's value in the user's terms:
// `--seed: "abc" is not a whole number`, not `invalid argument "abc" for
// "--seed" flag: strconv.ParseUint: parsing "abc": invalid syntax`.
// Values of cascade's own types (a size) already say so: their error is
// kept, after the flag's name.
func badValue(f *pflag.Flag, v string, cause error) error {
	name := "--" + f.Name
	var what string
	switch t := f.Value.Type(); {
	case errors.Is(cause, strconv.ErrRange):
		what = "is out of range"
	case strings.HasPrefix(t, "uint") && strings.HasPrefix(strings.TrimSpace(v), "-"):
		what = "is not a whole number of 0 or more"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		what = "is not a whole number"
	case strings.HasPrefix(t, "float"):
		what = "is not a number"
	case t == "bool":
		what = "is not true or false"
	case t == "duration":
		what = notDuration(v)
	case errors.As(cause, new(*csv.ParseError)):
		// A string list is read as CSV: a quote must enclose an item.
		what = fmt.Sprintf(`is not a list of values separated by commas (a '"' must enclose a whole value; or give %s once per value)`, name)
	default:
		return fmt.Errorf("%s: %w", name, cause)
	}
	return fmt.Errorf("%s: %q %s", name, v, what)
}

// notDuration says why v is not a duration, after the value: a number
// without a unit, or not one at all.
func notDuration(v string) string {
	if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
		return fmt.Sprintf("has no unit: say %ss, %sms or %sm", v, v, v)
	}
	return "is not a duration, such as 500ms, 30s, 5m or 1h30m"
}
