// Package fit calibrates a model (cascade.Model) against what a dataset
// observed: it grid-searches the propagation coefficients by replaying
// each observation window's arrivals through the model (package replay)
// and scoring the simulated windows against the observed ones — seed
// 002's method (sections 3.1, 3.2 and 6), made exact. Observe reads the
// windows, Run searches and reports, and the Result's model is the
// calibrated model document.
//
// # Observation windows
//
// The dataset's time range — from the first trace's start to the last's,
// a trace starting at its root span (else its earliest span) — is cut into
// windows of Config.Window (1 minute); a range shorter than two windows is
// one window. A trace belongs to the window its start falls in.
// Config.Windows fits every window that holds a trace ("all"), the
// busiest ("auto": the busiest window of each UTC day when the data
// covers two days or more, the seed's "peak hour of each day"; else the
// Busiest windows with the most traces), or a list of window numbers.
//
// Per window, Observe finds the requests of each trace the way graph does
// (a span starts a request in a node when it is a root, a server or
// consumer span, or of another service than its parent; a client span
// with no request below it calls the virtual node its peer names) and
// measures per node: requests (attempts included), failures (span status
// error), latency P50/P95/P99 (request durations, type-7 quantiles of up
// to 4,096 sampled values), and the mean queue depth where a queue_depth
// metric names the node's service (summed over instances, averaged over
// the metric's timestamps). Where no span records any status (Nezha's
// CSV), the failure evidence is ingest's: a trace cut short — no root
// span, or spans whose parent is missing — failed, at the top of each of
// its fragments. The window's root spans, from its start and at their
// entry node, are the arrivals the fit replays.
//
// Graph sets a node's overload base to its whole error rate, which holds
// the failures its callees caused. Run scales each base by the node's
// own share of failures (failed requests that called no failed request)
// so that replay does not count propagated failures twice.
//
// # The grid
//
// A grid (ParseGrid; Config.Grid) is the product of axes NAME=VALUES,
// where VALUES is START:STOP:STEP (STOP included) or A|B|C:
//
//	tier    the service tier of every node with observed tiers: model (the
//	        node's own distribution), p50, p95,
//	        p99 or mean (a constant), tiers (piecewise linear through
//	        P50/P95/P99), empirical (the observed quantile points)
//	p       Edge.Propagation
//	r       Retry.Reactivation of every retry policy (edges and entries)
//	k, theta  Overload.Slope and Overload.Threshold of every node
//	fanout  a scale on every edge's fan-out (for sampled traces)
//
// p, r and fanout take a target, p.TARGET: an edge class (sync, async,
// virtual: edges to virtual nodes) or an edge FROM->TO; k and theta take
// a node name. A targeted axis overrides the untargeted one for what it
// names, an edge beating a class. Parameters the grid does not name keep
// the model's values. DefaultGrid is
//
//	tier=model|p50|p95|p99|empirical,p=0.01:0.5:0.01,r=C-0.2:C+0.2:0.1,k=0:2:0.5,theta=0.6:1.2:0.2,fanout=1
//
// with C the observed re-activation, at least 1,000 points (15,000 for
// HotROD). A p is the seed's guess for edges whose propagation the
// capture does not show; where graph measured it (provenance observed:
// k of n logical calls that failed after their retries failed their
// caller), p is kept within that measure's 95% Wilson interval
// (cascade.EdgeObserved.PropagationInterval): a fit searches what the
// evidence leaves open, and where hundreds of failed calls all failed
// their caller the interval is [0.99, 1] whatever p the windows would
// like. Such an edge keeps provenance observed unless the value moved
// within the interval. A numeric axis written NAME=model holds what it names at the
// model's own values. The values observed directly — r and the fan-out — are its
// centre, and the report says how far the best point moved from them
// (and from the model's p, k and θ).
//
// # Scoring a point
//
// Each window is replayed (Config.Seeds seeds from Config.Seed, the same
// for every point: common random numbers) with its observed arrivals for
// its length plus Config.Drain, and each node's simulated calls,
// failures, P50, P95, P99 and mean queue are averaged over the seeds. The loss
// of a window sums, over the model's nodes weighted by √(requests + 1)
// (normalised within the window),
//
//	failure  (2·asin√f_sim − 2·asin√f_obs)²              f: failed ÷ requests
//	latency  ⅓·Σ ln²((Pq_sim+δ)/(Pq_obs+δ)), q = 50, 95, 99   δ: one tick
//	volume   ln²((calls_sim + 1)/(requests_obs + 1))     retries and fan-out
//	queue    ln²((depth_sim + 1)/(depth_obs + 1))        where observed
//
// each times its Config.Weights weight; a point's loss is the sum over
// windows, each weighted by its roots ÷ the mean roots of a window (a
// window holding a few traces cut off at the data's edge counts little). The arcsine makes a failure-rate error count alike at 1% and
// at 50% relative to its sampling noise; the logarithms make latency and
// volume errors relative. A replay that runs away (replay.ErrRunaway)
// scores +Inf.
//
// # Admissible tiers
//
// A constant tier (p50, p95, p99, mean) replaces each node's service
// distribution by one number: the spread goes, and at the P95 every
// request takes the P95. Such a point can score well when failures
// dominate the loss (every call now outlives a deadline, so failures the
// model cannot otherwise explain come back), while its replay misses the
// latency the capture shows; a what-if read from it answers for another
// system. So a constant-tier point is admissible only when its replay
// keeps the in-sample latency: at every node of the model (queues
// aside) with 20 observed requests or more, the replayed P50 within 15%
// of the observed, and with 100 or more the P99 within 50% (either
// within one tick counts), each the request-weighted mean over the
// windows as the report's per-node errors pool them — rank's tolerance
// (rank.DefaultTolerance), so the fit writes a model that rank's check
// of the capture trusts. A measure the nodes' observed distributions
// miss already (the model replayed with every node at the empirical
// tier, once per fit) is not held against a tier: a constant breaks only
// what the distribution keeps. Points are ordered by the number of
// measures they break, then by loss: every point of a distribution tier
// (model, tiers, empirical) is admissible, an admissible point beats an
// inadmissible one whatever their losses, and where no point is
// admissible (a grid of constant tiers only) the one breaking the fewest
// wins. The search, its local moves, the settling on profiles and plane,
// the refit with held axes and the back-tests (judged without the
// held-out window) all order points so. The report lists what a tier's
// best point breaks (PointResult.Breaks) and warns of each constant tier
// set aside; the surface counts a neighbour that breaks more than the
// best as a rise, and the tier gap is to the next tier that breaks no
// more.
//
// # Search
//
// Grids up to Config.Exhaustive points (2,000) are searched exhaustively.
// Larger ones are refined coarse to fine, separately for each tier: a
// coarse sub-grid (every value of axes of up to four values; both ends and
// the middle of longer ones); from each of the Config.Starts best coarse
// points a compass search that moves to the best of the points one stride
// up and down each axis while that lowers the loss and halves the strides
// when none does, adding diagonal moves in every pair of axes once the
// strides are one step; then a polish that looks two steps around the best
// point in every pair of axes, so that a valley running diagonally (k and
// θ trade off) is followed. Every point of the best point's profiles and
// loss plane is replayed too (the refine search has seen only some), and
// where one is better the best point moves there; these count among the
// points evaluated. Points are replayed in parallel
// (Config.Parallel workers, errgroup) into slices pre-sized by position,
// stored in index order, and the lowest loss (among the points that
// break the fewest latency measures, above) wins with ties to the point
// nearest the model's own values (the axes' centres, in steps), then to
// the lowest point index, so the result is identical at any parallelism.
//
// A propagation or re-activation axis whose profile is flat (the windows
// cannot see it: HotROD's failures are all absorbed by retries, whatever
// p) is not calibrated: the calibrated model keeps graph's value and
// provenance, since any grid value would be a guess. The other axes'
// best values were chosen jointly with that guess, so the grid is
// searched again with the flat axes held at the model's values
// (NAME=model; Report.Calibrated): the calibrated model is always a point
// the fit replayed, and Loss on the written model gives exactly the
// loss reported (Calibrated.Loss).
//
// The fit never makes the model worse: the model as it came is scored
// too, and it is kept (Calibrated.Kept says why; only Model.Fit is added)
// unless the calibrated point beats it in sample and, with back-tests,
// predicts the held-out windows no worse than it does (the sum of their
// losses).
//
// The model gives each node one base failure rate, so windows in which a
// node's own failures differ beyond chance (a burst inside the capture)
// cannot all be fitted: the fit averages the regimes (on the fixture
// generator a hard dependency, p = 1, fits 0.8 when its callee's error
// burst covers half the windows, and 0.9–1.0 when it covers all of them).
// A χ² test of homogeneity of each node's own failures over its requests,
// window by window (p < 0.001, at least 10 own failures), puts a warning
// in the report naming the node, the range of its rates and the test, and
// saying to fit one regime's windows (--windows) unless load explains the
// change through the overload curve.
//
// # Report
//
// The report holds the best point overall and per tier; the loss surface
// around the best point: for each numeric axis the relative loss increase
// one value down and up and the curvature d²L/dx², the axis counting as
// identifiable when every neighbour raises the loss by Config.FlatTolerance
// (1%) or more, and for the tier the gap to the next-best tier; the loss
// plane, the relative loss increase over the two numeric axes whose
// profiles rise most (by the largest increase along the axis, ties to
// grid order), the other axes at the best point, each side thinned to at
// most 25 values that keep the best's; how far the best point moved from
// the model's values; the per-node errors at the best point; and
// back-tests: for each of Config.Holdout windows (the busiest),
// the grid of the calibrated point (flat axes held) is searched again
// without that window (same search, its losses excluded), and the
// left-out window is predicted at that fit's best point with per-node
// errors — the error on data the fit did not see — beside the
// uncalibrated model's loss on it.
//
// Beside the grid, a logistic regression of per-call failure on load
// features (FitLogistic) is the seed's cross-check: the caller's and the
// callee's load ρ (in flight ÷ capacity, over the second the call
// started), root arrivals per second, and the attempt number, fitted with
// gonum's BFGS on the L2-penalised negative log-likelihood. Its node-load
// coefficient, as a marginal effect dP/dρ, stands beside the grid's k.
//
// The calibrated model is the input model at the calibrated point, provenance
// "fit" on every field the grid set (service_ms, propagation,
// retry.reactivation, overload.slope, overload.threshold, fan_out) and on
// scaled overload bases, and Model.Fit holding a Summary of the report.
package fit
