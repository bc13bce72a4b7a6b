// Package graph builds the directed call graph of a traced system and the
// statistics the propagation model needs, and writes them as an
// uncalibrated model document (cascade.Model) with Graphviz, Mermaid and
// table renderings.
//
// Build reads spans grouped by trace (a dataset's order) and, optionally,
// metric samples, and returns a Result: the model, what each node
// measured, the topological order, the cycles, the queues, the counts of
// what was read and warnings. Builder does the same row by row. At scale,
// where spans are not all kept, BuildAggregates builds a service-level
// model from the OpenTelemetry Collector's servicegraph and spanmetrics
// series, and Refine adds what only the series hold to a model built from
// a sample of traces. WriteTable and WriteMarkdown render a Result,
// WriteDOT and WriteMermaid its model. `cascade graph` and `cascade analyze`
// call it.
//
// Memory is bounded by the largest trace and by the nodes and edges, not
// by the dataset: each trace is analysed when the next begins and then
// forgotten. Sampling draws from a PCG generator seeded with Config.Seed,
// so a given input always gives the same model, byte for byte.
//
// The method — how spans become nodes, calls and queues, the statistics
// behind each field — is summarised in docs/graph.md; docs/model.md
// documents every field of the model and where its value comes from.
package graph
