// Package rank ranks remediations for a model by replaying them, sweeps
// its capacity and checks it for metastability. Where an incident began
// is package incident's job, which stands beside this one over replay.
//
// Run is the entry point: given a model (cascade.Model) and a Config
// (objective, seeds, traffic, surge, the user's own scenarios), it derives
// candidate changes from the model and its baseline replays (Derive),
// replays each against the baseline over the same seeds under a normal
// and a surge traffic, and returns a Report: every candidate with its
// paired effect, 95% interval and verdict (win, no measurable effect,
// worse, not enough data, model off its capture, failed), what it costs
// and why it works, the best compatible set of wins, the capacity curve
// (Capacity, also callable on its own) and the metastability check.
// RunShard and Merge split Run's replays over processes or machines and
// join them into the same Report; Prepare replays once what every shard
// would replay first (docs/shard.md). `cascade rank` and
// `cascade analyze` call it; package report renders what it returns.
//
// Where an incident began is package incident's job; both rank and
// incident replay through package replay.
//
// The method — which candidates are derived and why, how they are
// scored, when the data is too thin to rank on, the compatible set, the
// capacity sweep and the metastability check — is in docs/rank.md.
//
// Same model, configuration and seeds give the same Report, byte for
// byte, at any Config.Parallel or shard count.
package rank
