// Package check holds the client-side check of the Kubernetes manifests in
// deploy/kubernetes: each document decodes strictly into its
// Kubernetes API type (k8s.io/api: an unknown or misspelt field, or a
// value of the wrong type, fails), and the sharded run holds together (an
// Indexed Job whose completions, parallelism, --shard and the merge's
// wait agree; partials written where the merge reads them; volumes and
// claims that exist). It then runs the pods' commands on this machine
// against the bundled example, with /work a temporary directory, and
// compares the merge's output with the unsharded command's (skipped with
// -short).
//
// It is its own module, so that cascade does not depend on the
// Kubernetes API modules. .ci/run runs it: kubectl's client-side dry run
// needs a cluster to discover its API even in client mode, so the check
// is this test instead.
package check
