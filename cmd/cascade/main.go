// Command cascade is a trace-replay propagation analyzer. It ingests
// traces, queue metrics and logs (or records them live: collect), builds
// the call graph, fits propagation coefficients, finds where an incident
// began and replays the system to rank remediations; analyze runs the
// whole pipeline on one capture and writes the report.
//
// Every subcommand's flags, examples and exit codes are in docs/cli.md
// (generated from --help); the packages behind them are mapped in
// docs/README.md.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
