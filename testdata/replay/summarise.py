#!/usr/bin/python3
"""Summarises the reference runs into reference.json, which the Go tests read.

  simpy/runs.jsonl  written by simpy/sweep.sh (SimPy, seed 000)
  lb/runs.txt       written by lb/sweep.sh (lb_sim.py, seed 004)

Run: /usr/bin/python3 testdata/replay/summarise.py
"""
import collections, json, os, statistics as st

here = os.path.dirname(os.path.abspath(__file__))
rows = [json.loads(l) for l in open(os.path.join(here, "simpy", "runs.jsonl"))]
groups = collections.defaultdict(list)
for r in rows:
    groups[(r["rate_per_ms"], r["max_retries"], r["cancel"])].append(r)
seed000 = []
for (rate, retries, cancel), rs in sorted(groups.items()):
    seed000.append({
        "rate_per_ms": rate, "max_retries": retries, "cancel": cancel,
        "seeds": len(rs), "duration_ms": rs[0]["duration_ms"],
        "goodput_per_s": st.mean(r["goodput_per_s"] for r in rs),
        "goodput_sd": st.stdev(r["goodput_per_s"] for r in rs),
        "success_rate": st.mean(r["success_rate"] for r in rs),
        "zombies": st.mean(r["zombie_executions"] for r in rs),
        "zombies_completed": st.mean(r["zombie_completed"] for r in rs),
        # collapse as the issue defines it: goodput under 20% of offered
        # over the last tenth of the run
        "collapsed": sum(1 for r in rs if r["goodput_last10pct_per_s"] < 0.2 * r["offered_qps"]),
        "e2e_p99_ms": st.mean(r["e2e_p99_ms"] or 0 for r in rs),
        "cpu_s": sum(r["cpu_s"] for r in rs),
        "submitted": sum(r["submitted"] for r in rs),
    })
lb = collections.defaultdict(list)
published = {}
for line in open(os.path.join(here, "lb", "runs.txt")):
    seed, policy, mean, p50, p99, mx = line.split()
    if seed == "42":
        published[policy] = float(p99)
        continue
    lb[policy].append(float(p99))
seed004 = {p: {"seeds": len(v), "p99_mean": st.mean(v), "p99_sd": st.stdev(v),
               "p99_published": published[p]} for p, v in sorted(lb.items())}
out = {
    "commands": {
        "seed000": "testdata/replay/simpy/sweep.sh (SimPy 3.0.11, simpy_retry_storm.py, seeds 1..10, 100 s)",
        "seed004": "testdata/replay/lb/sweep.sh (lb_sim.py with random.seed redirected to seeds 1..100; seed 42 = published)",
    },
    "seed000": seed000,
    "seed004": seed004,
}
with open(os.path.join(here, "reference.json"), "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
