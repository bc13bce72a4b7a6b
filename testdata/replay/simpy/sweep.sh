#!/usr/bin/env bash
# Runs the seed-000 SimPy reference (../shared/reference/simpy_retry_storm.py)
# over a grid of rates, retry settings and seeds, one JSON line per run,
# into runs.jsonl beside this script. Needs SimPy 3 (apt-get install -y
# python3-simpy3). The Go tests read the summary in ../seed000_simpy.json,
# written from these lines by summarise.py; they do not need Python.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ref="${REF:-$here/../../../../shared/reference/simpy_retry_storm.py}"
out="$here/runs.jsonl"
: > "$out"
run() { /usr/bin/python3 "$ref" "$@" >> "$out"; }
for seed in $(seq 1 10); do
  for rate in 0.05 0.08 0.10 0.12; do
    run --rate "$rate" --max-retries 0 --duration 100000 --seed "$seed"
    run --rate "$rate" --max-retries 0 --duration 100000 --seed "$seed" --cancel on
    run --rate "$rate" --max-retries 3 --duration 100000 --seed "$seed" --cancel on
  done
  for rate in 0.05 0.06 0.07 0.08 0.09 0.10 0.11 0.12; do
    run --rate "$rate" --max-retries 3 --duration 100000 --seed "$seed"
  done
done
