package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"cascade/ingest"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0   // success
	exitFailure     = 1   // the run failed (I/O, internal error)
	exitUsage       = 2   // bad flags or arguments
	exitInvalidData = 3   // an input holds invalid records (positions on stderr)
	exitInterrupted = 130 // stopped by SIGINT or SIGTERM
)

// usageError marks an error in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// inputError marks an input that is not what the command reads (an empty
// file, traces where a model is expected): invalid input, exit 3.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// run builds the command tree, executes it and maps the outcome to an exit
// code. Only main exits.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(stdin)
	strictCompletion(root)
	root.SetArgs(oldOutSpellings(root, args, stderr))
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	err = unknownCommand(root, err)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// SIGINT (Ctrl-C) or SIGTERM stopped the run: say so, not the
		// "fit: context canceled" or "read FILE: context canceled" of
		// the stage it stopped.
		fmt.Fprintln(stderr, "cascade: interrupted")
		return exitInterrupted
	}
	msg := err.Error()
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
		// "missing.json: no such file or directory", not "stat missing.json: ...".
		msg = strings.Replace(msg, pe.Op+" "+pe.Path+": ", pe.Path+": ", 1)
	}
	fmt.Fprintf(stderr, "cascade: %s\n", msg)
	return exitCode(ctx, err)
}

// exitCode maps a command's error to the exit code the README documents.
func exitCode(ctx context.Context, err error) int {
	var (
		pe *ingest.ParseError
		ie *ingest.InputError
		ue usageError
		be inputError
	)
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &ue), errors.Is(err, fs.ErrNotExist):
		// An input path that names nothing is a mistake in the call.
		return exitUsage
	case errors.As(err, &pe), errors.As(err, &ie), errors.As(err, &be):
		return exitInvalidData
	}
	return exitFailure
}

// newRootCmd builds `cascade` with its subcommands; ingest reads stdin
// for a PATH of "-".
func newRootCmd(stdin io.Reader) *cobra.Command {
	root := &cobra.Command{
		Use:   "cascade",
		Short: "Trace-replay propagation analyzer",
		Long: `cascade reads what a distributed system recorded about itself (spans and
queue metrics), learns how load and failure spread along its call graph, and
replays that spread under changed settings to rank remediations.

Pipeline: ingest -> graph -> fit -> replay/rank. Each stage is a subcommand
that reads and writes documented files.

Exit codes: 0 success; 1 the run failed; 2 a usage error (a bad flag,
value or argument, an unknown command); 3 invalid input; 130 interrupted
by SIGINT (Ctrl-C) or SIGTERM ("cascade: interrupted").`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	root.SuggestionsMinimumDistance = 2
	root.AddCommand(newIngestCmd(stdin))
	root.AddCommand(newGraphCmd())
	root.AddCommand(newFitCmd())
	root.AddCommand(newReplayCmd())
	root.AddCommand(newRankCmd())
	root.AddCommand(newCollectCmd())
	root.AddCommand(newAnalyzeCmd())
	root.AddCommand(newMergeCmd())
	withVersion(root)
	return root
}

// strictCompletion makes `cascade completion SHELL` fail, as a usage
// error, for a shell it has no script for: cobra would print its help and
// exit 0, which a setup script takes for success.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("give a shell: one of %s", strings.Join(shells, ", "))}
			}
			return usageError{fmt.Errorf("completion %q: unknown shell, want one of %s", args[0], strings.Join(shells, ", "))}
		}
	}
}

// checkOutput validates an --output value.
func checkOutput(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return usageError{fmt.Errorf("--output %q: want one of %v", v, allowed)}
}
