#!/usr/bin/env bash
# End-to-end test of cascade on a message-queue chain (issue 26): the
# notification chain of testdata/notify (seed 002 §5.3's shape: a gateway
# fanning each event out to task queues, points depending on rights,
# retries) on a real RabbitMQ, exporting OTLP/HTTP to cascade collect, a
# real Prometheus scraping the broker's rabbitmq_prometheus endpoint, read
# back with cascade collect --from prometheus. It runs the chain before
# the fix and after it and checks the recordings and the contrast: before
# reaches the broker's memory alarm, after does not, after's flows succeed
# more (collect/e2e_notify_test.go; CASCADE_E2E_NOTIFY_STRICT=0 leaves the
# contrast out), then runs after at half the load (a healthy run) and checks
# that rank calls nothing a win on its model (STRICT=0 leaves that out too). About 3 minutes a run of both modes,
# and a minute for the healthy run.
#
# Called by .ci/run; runs alone too. The app is built through the Go
# module proxy (its own module, testdata/notify) into $CASCADE_E2E_CACHE
# (default ~/.cache/cascade-e2e), keyed by its sources. RabbitMQ is
# Debian's rabbitmq-server: apt-get installs it (policy may start it as a
# service on the default ports; the test starts nodes of its own on free
# ports, in temporary directories, and stops each). Prometheus is the one
# .ci/e2e.sh fetched (run that first), or one on PATH.
#
# CASCADE_E2E_NOTIFY_RUNS (default 1) runs each mode that many times,
# from seed CASCADE_E2E_NOTIFY_SEED (default 10); CASCADE_E2E_NOTIFY_OUT
# keeps the captures (see testdata/notify-before; every trace with
# CASCADE_E2E_NOTIFY_KEEP_EVERY=1) and the predictions;
# CASCADE_E2E_NOTIFY_VARIANTS=db-slots=8 (or retry-via=delay, retries=1,
# comma-separated) also runs before with that change, beside the before
# model's prediction of it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:${HOME}/go/bin:${PATH}"
SECONDS=0

cache="${CASCADE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cascade-e2e}"
mkdir -p "$cache"
group=""
cleanup() {
	if [ -n "$group" ]; then
		kill -TERM -- "-$group" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
	sudo="sudo"
fi
rabbit=/usr/lib/rabbitmq/bin
if [ ! -x "$rabbit/rabbitmq-server" ]; then
	echo "e2e-notify: installing Debian's rabbitmq-server"
	export DEBIAN_FRONTEND=noninteractive
	if ! $sudo apt-get install -y -qq rabbitmq-server >/dev/null; then
		$sudo apt-get update -qq
		$sudo apt-get install -y -qq rabbitmq-server >/dev/null
	fi
fi
echo "e2e-notify: rabbitmq-server $(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo '?')"

if command -v prometheus >/dev/null; then
	prometheus="$(command -v prometheus)"
else
	prometheus="$cache/prometheus-deb/usr/bin/prometheus"
fi
if [ ! -x "$prometheus" ]; then
	echo "e2e-notify: no Prometheus at $prometheus (.ci/e2e.sh fetches it)" >&2
	exit 1
fi

# The app, its own module: built with the Go module proxy, keyed by the
# hash of its sources and go.sum.
key="$(cat testdata/notify/go.mod testdata/notify/go.sum testdata/notify/*.go | sha256sum | cut -c1-16)"
app="$cache/notify-$key/notify"
if [ ! -x "$app" ]; then
	echo "e2e-notify: building testdata/notify into $(dirname "$app")"
	mkdir -p "$(dirname "$app")"
	(cd testdata/notify && GOFLAGS=-mod=readonly go build -o "$app.tmp" .)
	mv "$app.tmp" "$app"
fi

export CASCADE_E2E_NOTIFY=1 CASCADE_E2E_NOTIFY_APP="$app" CASCADE_E2E_PROMETHEUS="$prometheus" CASCADE_E2E_RABBITMQ="$rabbit"
setsid go test ./collect -run '^TestE2ENotify$' -count=1 -v -timeout 30m &
group=$!
wait "$group"
group=""
# One setting of the chain whose database slows with its waiters and
# refuses past a wait cap (issue 37; docs/validation.md, "A dependency
# that slows and refuses under load"): its before, two changes run live,
# each predicted from before's model. About 5 minutes.
CASCADE_E2E_NOTIFY_LOAD=1 CASCADE_E2E_NOTIFY_LOAD_SET=h setsid go test ./collect -run '^TestE2ENotifyLoad$' -count=1 -v -timeout 30m &
group=$!
wait "$group"
group=""
echo "e2e-notify: passed in ${SECONDS}s"
