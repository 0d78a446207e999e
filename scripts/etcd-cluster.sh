#!/usr/bin/env bash
# A throw-away 3-member etcd cluster on 127.0.0.1, for tests and `deno task cluster`.
# Adapted from shared/tools/etcd/etcd3node.sh.
#   etcd-cluster.sh start  [DIR] [PORTBASE]  fresh cluster; client ports PORTBASE+1..3, peer ports +11..13;
#                                            prints "healthy_ms=… endpoints=http://…,http://…,http://…"
#   etcd-cluster.sh stop   [DIR]             SIGTERM (then SIGKILL) each member by its pid file, removes DIR
#   etcd-cluster.sh kill1  N [DIR]           SIGKILL member N
#   etcd-cluster.sh start1 N [DIR] [PORTBASE] restarts member N on its data directory
# Needs Debian's etcd-server (apt-get install etcd-server) and curl.
set -euo pipefail
command -v etcd >/dev/null || { echo "etcd is not installed: apt-get install etcd-server" >&2; exit 3; }
cmd=${1:?start|stop|kill1|start1}
if [[ $cmd == kill1 || $cmd == start1 ]]; then N=${2:?member number}; shift; fi
BASE=${2:-/tmp/strata-etcd}
PB=${3:-23790}
cluster=""; for i in 1 2 3; do cluster+="n$i=http://127.0.0.1:$((PB+10+i)),"; done; cluster=${cluster%,}

member() { # $1 = member number, $2 = new|existing
  local i=$1
  # An ETCD_* variable that repeats a flag makes etcd exit at once: run with none of them.
  env -u ETCD_NAME -u ETCD_DATA_DIR nohup etcd --name "n$i" --data-dir "$BASE/n$i" \
    --listen-client-urls "http://127.0.0.1:$((PB+i))" --advertise-client-urls "http://127.0.0.1:$((PB+i))" \
    --listen-peer-urls "http://127.0.0.1:$((PB+10+i))" --initial-advertise-peer-urls "http://127.0.0.1:$((PB+10+i))" \
    --initial-cluster "$cluster" --initial-cluster-token "strata-$PB" --initial-cluster-state "$2" \
    --heartbeat-interval 50 --election-timeout 500 \
    --auto-compaction-mode revision --auto-compaction-retention 10000 \
    --logger zap --log-level "${STRATA_ETCD_LOG:-warn}" --log-outputs "$BASE/n$i.log" >>"$BASE/n$i.out" 2>&1 &
  echo $! >"$BASE/n$i.pid"
}
healthy() { for i in 1 2 3; do curl -sf -m 1 "http://127.0.0.1:$((PB+i))/health" | grep -q '"health":"true"' || return 1; done; }

case "$cmd" in
start)
  rm -rf "$BASE"; mkdir -p "$BASE"
  t0=$(date +%s%N)
  # One member at a time, each once the previous serves its peer port: started together, each new
  # member's probe of its half-started peers waits about 1 s per peer.
  for i in 1 2 3; do
    member "$i" new
    for _ in $(seq 1 200); do curl -s -m 0.2 -o /dev/null "http://127.0.0.1:$((PB+10+i))/members" && break; sleep 0.01; done
  done
  for _ in $(seq 1 500); do
    if healthy && curl -sf -m 1 -X POST "http://127.0.0.1:$((PB+1))/v3/kv/put" -d '{"key":"X19wcm9iZQ==","value":"b2s="}' >/dev/null; then
      echo "healthy_ms=$(( ($(date +%s%N)-t0)/1000000 )) endpoints=http://127.0.0.1:$((PB+1)),http://127.0.0.1:$((PB+2)),http://127.0.0.1:$((PB+3))"
      exit 0
    fi
    sleep 0.02
  done
  echo "etcd did not become healthy within 10 s; logs in $BASE" >&2; exit 1 ;;
stop)
  for i in 1 2 3; do
    f="$BASE/n$i.pid"; [ -f "$f" ] || continue
    pid=$(cat "$f"); kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true; rm -f "$f"
  done
  rm -rf "$BASE" ;;
kill1)
  kill -9 "$(cat "$BASE/n$N.pid")" 2>/dev/null || true; rm -f "$BASE/n$N.pid" ;;
start1)
  if [ -f "$BASE/n$N.pid" ] && kill -0 "$(cat "$BASE/n$N.pid")" 2>/dev/null; then echo "n$N is already running" >&2; exit 1; fi
  member "$N" existing ;;
*) echo "usage: etcd-cluster.sh start|stop|kill1 N|start1 N [DIR] [PORTBASE]" >&2; exit 2 ;;
esac
