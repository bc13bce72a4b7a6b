// Package fit calibrates a model (cascade.Model) against what a dataset
// observed: it grid-searches the propagation coefficients by replaying
// each observation window's arrivals through the model (package replay)
// and scoring the simulated windows against the observed ones — seed
// 002's method (sections 3.1, 3.2 and 6), made exact.
//
// Observe reads a dataset's spans (grouped by trace) and metric samples
// into observation windows for a model. Run searches a Grid (ParseGrid,
// DefaultGrid) over them and returns a Result: the Report (the best point
// overall and per tier, the loss surface and plane, per-node errors,
// back-tests on held-out windows, warnings) and the calibrated model
// document, provenance "fit" on every field it set. Loss scores one model
// as Run does; FitLogistic is the seed's logistic cross-check. RunShard
// and Merge split Run's replays over processes or machines and join them
// into the same Result (docs/shard.md). `cascade fit` and `cascade
// analyze` call it.
//
// The fit never makes the model worse: the model as it came is scored
// too and kept unless the calibrated point beats it in sample and on the
// held-out windows.
//
// The method — the windows, the grid and its axes, the loss, which tiers
// are admissible, the search, and what the report holds — is in
// docs/fit.md.
//
// Points are replayed in parallel and reduced in index order: the same
// inputs give the same Result at any Config.Parallel or shard count.
package fit
