#!/usr/bin/python3
"""Seed 000 side by side: cascade replay and the SimPy reference.

Runs `cascade replay testdata/replay/seed000.json` and the SimPy script
(simpy_retry_storm.py) on the same scenario — Poisson arrivals at RATE per
ms, 3 client retries, DURATION simulated seconds — each as a child process,
alternately, seeds 1..RUNS on both, and reports attempts (root requests
plus their retries; SimPy's raw_requests) per CPU-second of the whole
process (user + system, from wait4: start-up, model loading and output
included), SimPy's rate also per CPU-second of its simulate() alone (its
cpu_s), and the ratios. Run from the repository root:

    go build -o /tmp/cascade ./cmd/cascade
    /usr/bin/python3 testdata/replay/side_by_side.py --cascade /tmp/cascade

With --before OLD, each seed also runs the binary OLD, before the
--cascade one on odd seeds and after it on even ones (the process right
after SimPy's pays for the pages the host must back anew), so that a
change is measured before and after in one alternated series against
the same SimPy runs; --warm runs each cascade process once untimed
first, so that neither pays for them:

    /usr/bin/python3 testdata/replay/side_by_side.py --cascade /tmp/cascade \
        --before /tmp/cascade-before --runs 5 --duration-s 1000

CASCADE_SIMPY names the SimPy script (default:
../shared/reference/simpy_retry_storm.py). Needs SimPy 3 (Debian:
python3-simpy3).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def timed(cmd):
    """Runs cmd and returns its JSON output and its CPU time (user +
    system, from wait4, microsecond resolution)."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=null)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("%s: exit %d" % (" ".join(cmd), p.returncode))
    return json.loads(out), ru.ru_utime + ru.ru_stime


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--cascade", default="cascade", help="cascade binary (default: cascade on PATH)")
    a.add_argument("--before", help="a second cascade binary, run just before --cascade for each seed")
    a.add_argument("--simpy", default=os.environ.get("CASCADE_SIMPY",
                                                     "../shared/reference/simpy_retry_storm.py"))
    a.add_argument("--model", default="testdata/replay/seed000.json")
    a.add_argument("--rates", default="0.08,0.15", help="arrival rates per ms (default 0.08,0.15)")
    a.add_argument("--duration-s", type=int, default=100, help="simulated seconds (default 100)")
    a.add_argument("--runs", type=int, default=5, help="seeds per rate (default 5)")
    a.add_argument("--warm", action="store_true",
                   help="run each cascade process once untimed first, so that the timed one finds its pages ready")
    o = a.parse_args()
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    bins = ([("before", o.before)] if o.before else []) + [("cascade", o.cascade)]
    med = statistics.median
    for rate in [float(r) for r in o.rates.split(",")]:
        cs = {name: [] for name, _ in bins}
        ratios = {name: [] for name, _ in bins}
        ss, sin = [], []
        for seed in range(1, o.runs + 1):
            runs = []
            # The order alternates seed by seed: the first process after
            # SimPy's pays for pages the host must back anew (system time
            # that swings from 0.01 to 0.3 s), the second finds them
            # ready, which made a fixed order favour --cascade.
            order = bins if seed % 2 else bins[::-1]
            for name, binary in order:
                argv = [binary, "replay", o.model, "--arrivals", "%g" % (rate * 1000),
                        "--duration", "%ds" % o.duration_s, "--tick", "10us",
                        "--seed", str(seed), "-o", "json"]
                if o.warm:
                    timed(argv)  # untimed: the pages are ready for the timed run
                c, ccpu = timed(argv)
                runs.append((name, c, ccpu))
            runs.sort(key=lambda r: [n for n, _ in bins].index(r[0]))
            s, scpu = timed(["/usr/bin/python3", o.simpy, "--rate", str(rate), "--max-retries", "3",
                             "--duration", str(o.duration_s * 1000), "--seed", str(seed)])
            sa = s["raw_requests"]
            ss.append(sa / scpu)
            sin.append(sa / s["cpu_s"])
            for name, c, ccpu in runs:
                ca = c["counts"]["roots"] + c["counts"]["retries"]
                cs[name].append(ca / ccpu)
                ratios[name].append(cs[name][-1] / ss[-1])
                print("  %.2f/ms seed %d: %s %6d attempts in %.4f CPU-s (success %.3f) | "
                      "SimPy %6d attempts in %.4f CPU-s, %.4f in simulate (success %.3f) | ratio %.1fx"
                      % (rate, seed, name, ca, ccpu, c["success_rate"], sa, scpu, s["cpu_s"],
                         s["success_rate"], ratios[name][-1]))
        for name, _ in bins:
            print("%.2f/ms, %d s, %d seeds (medians): %s %.0f attempts/CPU-s; SimPy %.0f per process "
                  "CPU-s, %.0f per simulate CPU-s; ratio %.1fx process to process (runs %.1f-%.1fx), "
                  "%.1fx to SimPy's simulate alone"
                  % (rate, o.duration_s, o.runs, name, med(cs[name]), med(ss), med(sin),
                     med(ratios[name]), min(ratios[name]), max(ratios[name]), med(cs[name]) / med(sin)))
    print("load average %.2f %.2f %.2f" % os.getloadavg())


main()
