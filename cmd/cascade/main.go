// Command cascade is a trace-replay propagation analyzer: it ingests traces
// and queue metrics, builds the call graph, fits propagation coefficients
// and replays the system to rank remediations.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
