package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"cascade"
	"cascade/fit"
	"cascade/rank"
	"cascade/replay"
	"cascade/report"
)

// Flags of `cascade merge`.
const (
	mergeFlagOut      = "out"
	mergeFlagOutput   = "output"
	mergeFlagWide     = "wide"
	mergeFlagParallel = "parallel"
)

// newMergeCmd builds `cascade merge`: the partial results of sharded
// fits or rankings joined into the unsharded output.
func newMergeCmd() *cobra.Command {
	var (
		out, output string
		wide        bool
		parallel    int
	)
	cmd := &cobra.Command{
		Use:   "merge PARTIAL...|DIR",
		Short: "Join the partial results of a sharded fit or rank into its output",
		Long: `merge joins the partial results that cascade fit --shard or cascade rank
--shard wrote (one per shard, in any order; a directory means every *.json
file in it) and prints what the command prints unsharded: the fit's report
(and with --out its calibrated model), or the ranking. The output is the
unsharded command's, byte for byte, at any shard count.

Shard 0's partial holds the command's inputs (the model, the fit's
observations), and every partial the config and the inputs' hash, so
merge needs nothing else. It checks that the partials belong
together and names the file where one does not: the same format version,
command, inputs, config and shard count, every shard present exactly once,
each holding exactly its shard's work. The rest of the command, whose
replays depend on the shards' results, runs here: for fit, the refinement
and the refit (with p or r flat), the back-tests and the calibrated model's
windows; for rank, the scoring, the ranking and the best set (the tick
check, baseline and capacity sweep come from shard 0's partial).

The partial format is described in docs/shard.md. Exit codes: 0 merged;
2 usage (no partial given, a bad flag, an --out rank does not write); 3
invalid input (a file that is not a partial, a partial cut short or
changed, partials that do not belong together); 1 any other failure.`,
		Example: `  # a fit in two shards (on two machines), joined
  cascade fit /data/ds --model model.json --shard 0/2 --out parts/fit-0.json
  cascade fit /data/ds --model model.json --shard 1/2 --out parts/fit-1.json
  cascade merge parts/fit-0.json parts/fit-1.json --out calibrated.json

  # a ranking in four shards, joined from their directory, as Markdown
  cascade merge parts/ --output markdown`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("give the partial result files (or their directory)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := partialFiles(args)
			if err != nil {
				return err
			}
			kind, data, err := readPartials(files)
			if err != nil {
				return err
			}
			switch kind {
			case fit.PartialKind:
				return mergeFit(cmd, files, data, out, output, parallel)
			case rank.PartialKind:
				if out != "" {
					return usageError{fmt.Errorf("--%s: a ranking writes no file; its report is on stdout", mergeFlagOut)}
				}
				return mergeRank(cmd, files, data, output, wide, parallel)
			}
			return inputError{fmt.Errorf("%s: a partial result of %q, which this cascade does not merge (fit or rank)", files[0], kind)}
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, mergeFlagOut, "", "a fit's: write the calibrated model to this file")
	f.StringVarP(&output, mergeFlagOutput, "o", "table", "output format: table, json or markdown")
	f.BoolVar(&wide, mergeFlagWide, false, "a ranking's --output table: print the full tables, however wide")
	f.IntVar(&parallel, mergeFlagParallel, 0, "replays run at once (default: all cores); does not change the output")
	cmd.RegisterFlagCompletionFunc(mergeFlagOutput, fixedCompletions("table", "json", "markdown"))
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

// mergeFit merges a fit's partials (data, read from files): the report
// on stdout, the calibrated model to out.
func mergeFit(cmd *cobra.Command, files []string, data [][]byte, out, output string, parallel int) error {
	if err := checkOutput(output, "table", "json", "markdown"); err != nil {
		return err
	}
	if err := checkOut(mergeFlagOut, out, outFile); err != nil {
		return err
	}
	parts := make([]*fit.Partial, len(files))
	for i := range files {
		var err error
		if parts[i], err = fit.DecodePartial(data[i]); err != nil {
			return inputError{fmt.Errorf("%s: %w", files[i], err)}
		}
		parts[i].File = files[i]
	}
	res, err := fit.Merge(cmd.Context(), parts, fit.MergeOptions{Parallel: parallel, Progress: progress(cmd.ErrOrStderr(), "merge", "points")})
	if err != nil {
		return mergeError(err)
	}
	if out != "" {
		b, err := cascade.EncodeModel(res.Model)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(out, b); err != nil {
			return fmt.Errorf("write calibrated model: %w", err)
		}
	}
	return writeFitReport(cmd.OutOrStdout(), res.Report, output)
}

// mergeRank merges a ranking's partials (data, read from files): the
// report on stdout, as cascade rank prints it.
func mergeRank(cmd *cobra.Command, files []string, data [][]byte, output string, wide bool, parallel int) error {
	if err := checkOutput(output, "table", "json", "markdown"); err != nil {
		return err
	}
	parts := make([]*rank.Partial, len(files))
	var source string
	for i := range files {
		var err error
		if parts[i], err = rank.DecodePartial(data[i]); err != nil {
			return inputError{fmt.Errorf("%s: %w", files[i], err)}
		}
		parts[i].File = files[i]
		if parts[i].Shard.Index == 0 {
			source = parts[i].Source // the model's name as shard 0 read it
		}
	}
	rep, err := rank.Merge(cmd.Context(), parts, rank.MergeOptions{Parallel: parallel, Progress: progress(cmd.ErrOrStderr(), "merge", "replays")})
	if err != nil {
		return mergeError(err)
	}
	printThin(cmd.ErrOrStderr(), rep)
	doc := &report.RankDocument{Model: source, Rank: rep}
	if output == "table" {
		return report.RankText(cmd.OutOrStdout(), doc, report.TextOptions{Width: outputWidth(cmd.OutOrStdout()), Wide: wide})
	}
	return report.Rank(cmd.OutOrStdout(), doc, report.Format(output))
}

// partialFiles expands the arguments of merge: a directory is its *.json
// files, sorted.
func partialFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, usageError{fmt.Errorf("%s: no partial result (*.json) in the directory", a)}
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	return files, nil
}

// readPartials reads every file and the kind of partial they hold; files
// of different kinds are an error naming the first that differs.
func readPartials(files []string) (string, [][]byte, error) {
	var kind string
	data := make([][]byte, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", nil, err
		}
		h, err := replay.PeekPartial(b)
		if err != nil {
			return "", nil, inputError{fmt.Errorf("%s: %w", f, err)}
		}
		if i == 0 {
			kind = h.Kind
		} else if h.Kind != kind {
			return "", nil, inputError{fmt.Errorf("%s: a %s partial, but %s is a %s partial", f, h.Kind, files[0], kind)}
		}
		data[i] = b
	}
	return kind, data, nil
}

// mergeError makes partials that do not belong together invalid input
// (exit 3).
func mergeError(err error) error {
	if errors.Is(err, replay.ErrPartials) {
		return inputError{err}
	}
	return err
}

// writePartial writes a shard's partial result to path (atomically) and
// says on w what it holds.
func writePartial(w io.Writer, path string, h replay.PartialHeader, what string, encode func() ([]byte, error)) error {
	if err := writeShardFile(path, "partial result", encode); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s shard %s: %s, written to %s; cascade merge joins the %d partials\n",
		h.Kind, h.Shard, what, path, h.Shard.Count)
	return err
}

// writeShardFile writes what encode returns to path, atomically, making
// its directory: the shards of one run share one, and the first to
// finish makes it. what names the file in errors.
func writeShardFile(path, what string, encode func() ([]byte, error)) error {
	b, err := encode()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	if err := writeFileAtomic(path, b); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}
