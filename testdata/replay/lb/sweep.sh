#!/usr/bin/env bash
# Runs the seed-004 reference (../shared/reference/lb_sim.py) unchanged but
# for its seed: random.seed(42) is redirected to random.seed(S) for S in
# 1..${SEEDS:-100}, plus S=42 (the published run). One line per run:
# "seed policy mean p50 p99 max", into runs.txt beside this script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ref="${REF:-$here/../../../../shared/reference/lb_sim.py}"
out="$here/runs.txt"
: > "$out"
for s in 42 $(seq 1 "${SEEDS:-100}"); do
  /usr/bin/python3 - "$ref" "$s" <<'PY' | awk -v s="$s" '$1 ~ /^(round-robin|random|least-loaded)$/ {print s, $1, $2, $3, $4, $5}' >> "$out"
import random, sys
path, seed = sys.argv[1], int(sys.argv[2])
_seed = random.seed
random.seed = lambda *a, **k: _seed(seed)
exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
PY
done
