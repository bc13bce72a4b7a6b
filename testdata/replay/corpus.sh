#!/bin/bash
# Replays a corpus of model x change x seed cases with a cascade binary,
# one JSON file per replay, so that two binaries can be compared byte for
# byte (BENCHMARKS.md, Replay, sixth round):
#
#     go build -o /tmp/old ./cmd/cascade    # at the base commit
#     go build -o /tmp/new ./cmd/cascade
#     testdata/replay/corpus.sh /tmp/old /tmp/c-old
#     HOTROD_MODEL=/tmp/c-old/hotrod.json testdata/replay/corpus.sh /tmp/new /tmp/c-new
#     diff -r /tmp/c-old /tmp/c-new
#
# Run from the repository root. The HotROD model is built with the
# binary's own cascade graph unless HOTROD_MODEL names one (give the
# second run the first run's, so that only the replay is compared).
# Summaries use --parallel 1.
set -u
B=$1; O=$2; mkdir -p "$O"
S0=testdata/replay/seed000.json; S2=testdata/replay/seed002.json; S4=testdata/replay/seed004.json
H=${HOTROD_MODEL:-$O/hotrod.json}
if [ -z "${HOTROD_MODEL:-}" ]; then
  "$B" graph testdata/hotrod-baseline/traces-otlp.json.gz -o "$H" >/dev/null || exit 1
fi
i=0
c() { # model, then args
  local m=$1; shift
  for seed in 1 2 3; do
    i=$((i+1))
    "$B" replay "$m" --seed $seed -o json --series "$@" > "$O/case$i.json" 2>"$O/case$i.err"; echo "rc=$?" >> "$O/case$i.err"
  done
  i=$((i+1)); "$B" replay "$m" --seeds 3 --parallel 1 -o json "$@" > "$O/case$i.json" 2>"$O/case$i.err"; echo "rc=$?" >> "$O/case$i.err"
}
T="--duration 20s --tick 10us"
c $S0 $T --arrivals 80
c $S0 $T --arrivals 150
c $S0 --duration 30s --arrivals 100
c $S0 $T --arrivals 100 --set node.server.queue_cap=30
c $S0 $T --arrivals 120 --set 'node.server.breaker={"error_rate":0.5,"window":20,"min_calls":10,"open_ms":300,"half_open_probes":2}'
c $S0 $T --arrivals 120 --set 'entry.uplink.retry.budget={"ratio":0.2,"min_per_sec":5}'
c $S0 $T --arrivals 120 --set 'entry.uplink.retry.backoff={"kind":"decorrelated-jitter","base_ms":20,"max_ms":400}'
c $S0 $T --arrivals 120 --set 'entry.uplink.retry.backoff={"kind":"exponential","base_ms":20,"max_ms":400}'
c $S0 $T --arrivals 120 --set 'entry.uplink.retry.backoff={"kind":"fixed","base_ms":20}'
c $S0 $T --arrivals 100 --set 'entry.uplink.rate_limit={"rate_per_sec":60,"burst":10}'
c $S0 $T --arrivals 100 --set 'edge.uplink->server.availability={"up":0.95,"mean_down_ms":200}'
c $S0 $T --arrivals 100 --set 'edge.uplink->server.availability={"partitions":[{"at_ms":5000,"for_ms":2000}]}'
c $S0 $T --arrivals 100 --set 'node.server.overload={"base":0.01,"slope":0.5,"threshold":0.7}'
c $S0 $T --arrivals 100 --set 'node.server.overload={"base":0.02,"slope":0,"threshold":0,"failure_gaps":{"kind":"exp","mean":50}}'
c $S0 $T --arrivals 100 --set 'node.server.overload={"base":0.05,"slope":0,"threshold":0}' --set 'node.server.fail_service_ms={"kind":"const","value":2}'
c $S0 $T --arrivals 100 --set node.server.service_ms.scale=1.2 --set node.server.service_ms.shift_ms=3
c $S0 $T --arrivals 100 --set entry.uplink.low_priority=0.3 --set node.server.shed_low_at=10
c $S0 $T --arrivals 100 --set node.server.deadline_propagation=true
c $S0 $T --arrivals 100 --set node.server.replicas=3 --set node.server.load_balancer=least-loaded
c $S0 $T --arrivals 100 --set node.server.replicas=3 --set node.server.load_balancer=p2c
c $S0 $T --arrivals 100 --set node.server.replicas=3 --set node.server.load_balancer=random
c $S0 $T --arrivals closed:20,50ms
c $S0 $T --arrivals 80 --surge 2,5s,5s
c $S2 --duration 20s
c $S2 --duration 20s --set 'edge.dispatcher->worker.fan_out={"kind":"uniform","min":1,"max":6}' --set 'edge.dispatcher->worker.parallelism=2'
c $S2 --duration 20s --set 'edge.dispatcher->worker.shared_pool=true' --set 'edge.dispatcher->worker.parallelism=2'
c $S2 --duration 20s --set 'edge.dispatcher->worker.async=true'
c $S2 --duration 20s --set 'edge.dispatcher->worker.bulkhead=2' --set 'edge.dispatcher->worker.timeout_ms=50'
c $S2 --duration 20s --set 'edge.dispatcher->worker.fallback={"probability":0.5}' --set 'node.worker.overload={"base":0.1,"slope":0,"threshold":0}'
c $S2 --duration 20s --set 'edge.dispatcher->worker.network_ms={"kind":"normal","mean":2,"sigma":0.5,"floor":0.1}'
# Seed 002 with nothing that fails or times out: no children lists, so
# calls into the worker take the lean leaf path (Engine.callLeaf).
P="--set edge.dispatcher->worker.timeout_ms=0 --set node.worker.overload={\"base\":0,\"slope\":0,\"threshold\":0}"
c $S2 --duration 20s $P
c $S2 --duration 20s $P --set 'edge.dispatcher->worker.fan_out={"kind":"uniform","min":1,"max":6}' --set 'edge.dispatcher->worker.parallelism=2'
c $S2 --duration 20s $P --set 'edge.dispatcher->worker.shared_pool=true' --set 'edge.dispatcher->worker.parallelism=2'
c $S2 --duration 20s $P --set node.worker.concurrency=2 --set entry.dispatcher.low_priority=0.5 --set node.worker.shed_low_at=2
c $S4 --duration 20s
c $S4 --duration 20s --scenario testdata/replay/seed004-least-loaded.yaml
c $S4 --duration 20s --scenario testdata/replay/seed004-random.yaml
c $H --duration 60s
c $H --duration 60s --arrivals 20
c $H --duration 60s --set 'edge.driver->redis-manual.retry.max_attempts=1'
c $H --duration 60s --arrivals closed:5,0 --tier p95
c $H --duration 60s --tier empirical --arrivals 10
# Seed 000 without its root timeout, and HotROD without timeouts, network
# delays or failures: no children lists, so calls into the server (and
# into HotROD's customer and driver) that start at once take the lean
# path of a parent (Engine.callLean, finishLean); with low-priority calls
# shed at a slow downlink and retries into the server, leanFailed too.
c $S0 $T --arrivals 60 --set entry.uplink.timeout_ms=0
c $S0 $T --arrivals 60 --set entry.uplink.timeout_ms=0 --set entry.uplink.low_priority=0.5 --set node.downlink.concurrency=1 --set node.downlink.shed_low_at=1 --set node.downlink.service_ms.scale=2.5 --set 'edge.uplink->server.retry={"reactivation":1,"max_attempts":2}'
Z='{"kind":"const","value":0}'
c $H --duration 60s --set "edge.frontend->customer.network_ms=$Z" --set "edge.frontend->driver.network_ms=$Z" --set "edge.frontend->route.network_ms=$Z" --set 'edge.driver->redis-manual.timeout_ms=0' --set 'node.redis-manual.overload={"base":0,"slope":0,"threshold":1,"failure_gaps":null}'
echo "cases $i"
