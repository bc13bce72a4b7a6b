package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit is the git commit the binary was built from as the README's
// install command links it in, whatever the toolchain stamps:
//
//	go install -ldflags "-X main.commit=$(git rev-parse HEAD)" ./cmd/cascade
//
// Empty in a build without it.
var commit string

// version says which cascade this is: the module version and the VCS
// commit the binary was built from, as the Go toolchain stamped them into
// it, and whether the tree had uncommitted changes:
//
//	cascade v0.0.0-20260102150405-539aa64c3a1f+dirty, commit 539aa64c3a1f... (modified)
//	cascade (devel), commit 539aa64c3a1f...
//	cascade (devel), commit not stamped
//
// The toolchain stamps a build (go build, go run) in a git clone; not one
// with -buildvcs=false, nor one in a git worktree, whose .git is a file.
// There linked, the commit set at link time (-X main.commit), stands in.
func version(info *debug.BuildInfo, ok bool, linked string) string {
	v, rev, modified := "(devel)", "", false
	if ok {
		if info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = linked
	}
	switch {
	case rev == "":
		return fmt.Sprintf("cascade %s, commit not stamped", v)
	case modified:
		return fmt.Sprintf("cascade %s, commit %s (modified)", v, rev)
	}
	return fmt.Sprintf("cascade %s, commit %s", v, rev)
}

// buildVersion is version of this binary.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	return version(info, ok, commit)
}

// withVersion gives root --version and adds `cascade version`; both
// print the same line on stdout.
func withVersion(root *cobra.Command) {
	root.Version = buildVersion()
	root.SetVersionTemplate("{{.Version}}\n")
	// Declared here so that cobra's default (with a -v shorthand and
	// "version for cascade") is not.
	root.Flags().Bool("version", false, "print the version and the commit built from, and exit")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit built from",
		Long: `version prints cascade's module version and the VCS commit it was built
from, as the Go toolchain stamps them into the binary when it builds in a
git clone: the version is then the commit's tag or pseudo-version, and
"+dirty" and "(modified)" say the tree had uncommitted changes. Where the
toolchain stamps nothing (-buildvcs=false, a git worktree), the commit is
the one the install command links in:

  go install -ldflags "-X main.commit=$(git rev-parse HEAD)" ./cmd/cascade

and a build without either is "(devel), commit not stamped". cascade
--version prints the same.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{errors.New("version takes no arguments")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), cmd.Root().Version)
			return err
		},
	})
}
