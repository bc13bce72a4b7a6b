// Package replay is cascade's tick-based diffusion engine: it replays a
// model (cascade.Model) under a scenario (cascade.Scenario) and measures
// how load and failure spread (cascade.Outcome, in a Result).
//
// Replay runs one seed; RunSeeds runs several in parallel, and Summarize
// gives each headline metric's mean and 95% interval over them; Compare
// pairs a baseline's seeds with a what-if's. NewEngine and Engine.Run
// replay one model seed after seed without rebuilding it. A scenario
// (docs/scenario.md) changes the model with JSON merge patches over the
// model's own documents: LoadScenario and ParseScenario read one,
// ParseSet turns `--set` lines into one, and Apply applies them.
// `cascade replay` calls it, and so do fit, rank, incident and graph
// (to read a pool's sharing) for every replay they run.
//
// A Result holds the Outcome: latencies of successful root requests,
// success rate, goodput, amplification, retry, rejected and zombie
// shares, per-node and per-window series, infection spread, collapse and
// recovery, and, on models with async edges or message queues, flows.
//
// The engine runs on a virtual clock of ticks (Config.Tick, default 1 ms)
// and never reads the wall clock. Randomness comes from PCG streams
// derived from Config.Seed, one per purpose and per node, edge or entry,
// so scenarios compared under one seed see common random numbers. Same
// model, configuration and seed give the same Result, byte for byte once
// encoded.
//
// The method — the engine, a call, message queues, arrivals, outcomes and
// scenarios — is in docs/replay.md; the model's fields in docs/model.md.
package replay
