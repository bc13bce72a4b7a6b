// Package incident finds where an incident began. From a capture's spans
// (and, when given, its metric samples, its logs and a fault-free
// reference capture) it judges each node and call edge window by window
// against its normal range, explains each change by its callees or
// callers along the call graph, orders the unexplained changes as
// origins, and checks the first of them by replaying their faults in the
// model.
//
// RootCause (spans, an optional reference, the model) and Investigate (an
// Input that adds samples, logs and their references) are the entry
// points; `cascade analyze` and `cascade rank --incident` call them. Both
// return an Incident: the origins (at most Config.Top) with a confidence
// and its track record, every node with its change, evidence, score and
// replay fit, the path the degradation climbed from the origin, the most
// infectable nodes, and Warnings naming each signal given and not judged.
// Package report renders it.
//
// It stands beside package rank, over replay: the replays go through
// replay.Batch and the faults are written as replay's scenario patches.
//
// DefaultConfig gives the thresholds the method was chosen with; the
// confidence's track record is counted on faults held out from that
// choice (docs/validation.md, "Root cause, round 2").
//
// The method — the tests per window, per call and per request, how a
// change is explained, how origins are ordered, the replay check — is in
// docs/incident.md.
//
// Same spans, samples, model, configuration and seed give the same
// Incident, byte for byte, at any Config.Parallel.
package incident
