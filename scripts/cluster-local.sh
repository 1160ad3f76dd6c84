#!/usr/bin/env bash
# cluster-local.sh: trawl's distributed topology as processes on loopback,
# for machines without Docker and for the end-to-end test:
#   NATS_NODES nats-server nodes (default 3, a JetStream cluster; built from
#   the nats-server Go module trawl already depends on), SHARDS frontier
#   shards (default 2), CRAWLERS crawler workers (default 3).
#
# usage: scripts/cluster-local.sh start|stop|status|nats-url
#
# Environment:
#   CLUSTER_DIR   state, logs, pids and binaries (default ./trawl-cluster)
#   CLUSTER_PORT  base port (default 14222): NATS clients base..base+2,
#                       routes base+10.., monitoring base+20.., frontier
#                       metrics base+30..
#   NATS_NODES, SHARDS, CRAWLERS  the topology (defaults 3, 2, 3)
#   CLUSTER_CONFIG        a trawl config file given to every frontier and crawler
#   CLUSTER_BIN           directory with prebuilt crawler, frontier, nats-server
#                       (default: build them into $CLUSTER_DIR/bin)
# (These names do not start with TRAWL_: every TRAWL_* variable must name a
# configuration key, or trawl refuses to start.) Any TRAWL_* configuration variable (TRAWL_POLITENESS_MIN_DELAY=0s, ...) is
# passed through to the processes.
#
# After start: scripts/cluster-local.sh nats-url prints the NATS URL; seed a
# crawl with `crawler seed --nats URL https://example.com/` and watch it with
# `frontier status --nats URL`.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${CLUSTER_DIR:-$PWD/trawl-cluster}
base=${CLUSTER_PORT:-14222}
nodes=${NATS_NODES:-3}
shards=${SHARDS:-2}
crawlers=${CRAWLERS:-3}
bin=${CLUSTER_BIN:-$dir/bin}

nats_url() {
  local urls=()
  for ((i = 0; i < nodes; i++)); do urls+=("nats://127.0.0.1:$((base + i))"); done
  (IFS=,; echo "${urls[*]}")
}

build() {
  [ -n "${CLUSTER_BIN:-}" ] && return
  mkdir -p "$bin"
  (cd "$here" && go build -o "$bin/crawler" ./cmd/crawler && go build -o "$bin/frontier" ./cmd/frontier \
    && go build -o "$bin/nats-server" github.com/nats-io/nats-server/v2)
}

# spawn NAME CMD...: start a process in its own session, remember its pid.
spawn() {
  local name=$1; shift
  setsid "$@" >"$dir/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$dir/pids/$name.pid"
}

wait_http() { # wait_http URL SECONDS
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    if ((SECONDS > deadline)); then echo "cluster-local: $1 not ready after $2s" >&2; return 1; fi
    sleep 0.2
  done
}

start() {
  build
  mkdir -p "$dir/logs" "$dir/pids" "$dir/data"
  local routes=()
  for ((i = 0; i < nodes; i++)); do routes+=("nats://127.0.0.1:$((base + 10 + i))"); done
  for ((i = 0; i < nodes; i++)); do
    local args=(-js -sd "$dir/data/nats-$i" -a 127.0.0.1 -p $((base + i)) -m $((base + 20 + i)) --server_name "trawl-n$i")
    if ((nodes > 1)); then
      args+=(--cluster_name trawl --cluster "nats://127.0.0.1:$((base + 10 + i))" --routes "$(IFS=,; echo "${routes[*]}")")
    fi
    spawn "nats-$i" "$bin/nats-server" "${args[@]}"
  done
  for ((i = 0; i < nodes; i++)); do
    wait_http "http://127.0.0.1:$((base + 20 + i))/healthz?js-enabled-only=true" 60
  done
  if ((nodes > 1)); then # JetStream needs a meta leader before streams can be made
    wait_http "http://127.0.0.1:$((base + 20))/healthz" 60
  fi
  local url replicas=1
  url=$(nats_url)
  ((nodes >= 3)) && replicas=3
  local cfg=()
  [ -n "${CLUSTER_CONFIG:-}" ] && cfg=(--config "$CLUSTER_CONFIG")
  export TRAWL_NATS_REPLICAS=${TRAWL_NATS_REPLICAS:-$replicas} TRAWL_FRONTIER_SHARDS=$shards
  for ((i = 0; i < shards; i++)); do
    spawn "frontier-$i" "$bin/frontier" "${cfg[@]}" --nats "$url" --shard "$i" --shards "$shards" \
      --data-file "$dir/data/frontier-$i-of-$shards.db" --metrics "127.0.0.1:$((base + 30 + i))"
  done
  for ((i = 0; i < shards; i++)); do
    wait_http "http://127.0.0.1:$((base + 30 + i))/metrics" 120
  done
  for ((i = 0; i < crawlers; i++)); do
    spawn "crawler-$i" "$bin/crawler" "${cfg[@]}" --nats "$url"
  done
  echo "cluster-local: $nodes NATS node(s), $shards frontier shard(s), $crawlers crawler(s) running"
  echo "cluster-local: NATS $url; logs in $dir/logs"
}

stop() {
  [ -d "$dir/pids" ] || return 0
  local f
  # Crawlers first (they finish and publish what they hold), then frontiers
  # (they checkpoint), then NATS.
  for group in crawler frontier nats; do
    for f in "$dir"/pids/$group-*.pid; do
      [ -e "$f" ] || continue
      kill -TERM "$(cat "$f")" 2>/dev/null || true
    done
    for f in "$dir"/pids/$group-*.pid; do
      [ -e "$f" ] || continue
      local pid; pid=$(cat "$f")
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$f"
    done
  done
  echo "cluster-local: stopped"
}

status() {
  local f
  for f in "$dir"/pids/*.pid; do
    [ -e "$f" ] || continue
    local name; name=$(basename "$f" .pid)
    if kill -0 "$(cat "$f")" 2>/dev/null; then echo "$name running (pid $(cat "$f"))"; else echo "$name exited"; fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  nats-url) nats_url ;;
  *) echo "usage: $0 start|stop|status|nats-url" >&2; exit 2 ;;
esac
