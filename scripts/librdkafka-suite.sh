#!/usr/bin/env bash
# librdkafka's broker test suite against a fresh single Strata node: quick mode, no local-only tests, none
# with known issues, none that need socket emulation (test-runner -L -K -E -Q -V 3.4.0).
#   librdkafka-suite.sh run     TESTS_DIR [FLAG...]  one run; prints "NAME STATUS" for each test it ran
#   librdkafka-suite.sh compare TESTS_DIR            a run without and one with -P (every producer
#                                                    idempotent); exits 1 if a test passing without -P
#                                                    does not pass with it
# TESTS_DIR is the tests/ directory of a built librdkafka source tree (apt-get source librdkafka;
# ./configure && make libs && make -C tests build). TESTS=0090 narrows a run as test-runner does.
# LIBRDKAFKA_SUITE_PORT (19092) is the Kafka port; each run starts the server on a fresh data directory.
# LIBRDKAFKA_SUITE_NODES=3 runs it against a fresh 3-node cluster instead (scripts/local-cluster.ts,
# etcd and Kafka ports from LIBRDKAFKA_SUITE_PORT_BASE, 27000), as the suite's reference brokers are.
set -euo pipefail
cmd=${1:?run|compare}
tests_dir=$(cd "${2:?the tests/ directory of a built librdkafka tree}" && pwd)
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
port=${LIBRDKAFKA_SUITE_PORT:-19092}
work=$(mktemp -d /tmp/strata-librdkafka-XXXXXX)
# The runs' logs (the suite's and the server's) are kept there when LIBRDKAFKA_SUITE_LOGS names a directory.
logs=${LIBRDKAFKA_SUITE_LOGS:-}
server_pid=""
# The server runs in a process group of its own (setsid), so that stopping it stops `deno task`'s child too.
stop_server() {
  if [[ -z $server_pid ]]; then return; fi
  kill -- "-$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
trap 'stop_server; if [[ -n $logs ]]; then mkdir -p "$logs" && cp "$work"/*.log "$logs"/; fi; rm -rf "$work"' EXIT

nodes=${LIBRDKAFKA_SUITE_NODES:-1}
brokers="127.0.0.1:$port"

# A fresh cluster of $nodes nodes under $work/cluster-$1; $brokers becomes its bootstrap list.
start_cluster() {
  local log="$work/cluster-$1.log"
  (cd "$root" && STRATA_KAFKA_DEFAULT_PARTITIONS=4 exec setsid deno run -A scripts/local-cluster.ts \
    --dir "$work/cluster-$1" --nodes "$nodes" --port-base "${LIBRDKAFKA_SUITE_PORT_BASE:-27000}" >"$log" 2>&1) &
  server_pid=$!
  for _ in $(seq 1 1200); do
    if grep -q '^bootstrap=' "$log"; then
      brokers=$(sed -n 's/^bootstrap=//p' "$log")
      return 0
    fi
    sleep 0.1
  done
  echo "Cannot start the cluster: no bootstrap line in 120 s; see $log" >&2
  exit 2
}

# A fresh server: its data under $work, the Kafka port the suite's test.conf names, 4 partitions per
# topic created on first use (as the suite's reference brokers do).
start_server() {
  if ((nodes > 1)); then
    start_cluster "$1"
    return
  fi
  local data="$work/data-$1" log="$work/server-$1.log"
  rm -rf "$data"
  sed -e "s|^path = \"./data\"|path = \"$data\"|" \
    -e 's|^address = "127.0.0.1:8080"|address = "127.0.0.1:0"|' \
    -e "s|^address = \"127.0.0.1:9092\"|address = \"127.0.0.1:$port\"|" \
    "$root/config.toml" >"$work/config.toml"
  (cd "$root" && STRATA_KAFKA_DEFAULT_PARTITIONS=4 exec setsid deno task server --config "$work/config.toml" \
    >"$log" 2>&1) &
  server_pid=$!
  for _ in $(seq 1 600); do grep -q '"msg":"listening"' "$log" && return 0; sleep 0.1; done
  echo "Cannot start the server: no \"listening\" line in 60 s; see $log" >&2
  exit 2
}

# One run of the suite; its statuses ("NAME PASSED|FAILED") go to $work/status-$1.
run_suite() {
  local name=$1
  shift
  start_server "$name"
  echo "metadata.broker.list=$brokers" >"$work/test.conf"
  (cd "$tests_dir" && LD_LIBRARY_PATH=../src:../src-cpp RDKAFKA_TEST_CONF="$work/test.conf" \
    timeout 3600 ./test-runner -L -K -E -Q -V 3.4.0 "$@" >"$work/suite-$name.log" 2>&1) || true
  stop_server
  # The banners each test prints when it ends: the runner's closing table may be cut short by an abort.
  sed 's/\x1b\[[0-9;]*m//g' "$work/suite-$name.log" |
    grep -oE '(Test [0-9]{4}[a-z0-9_]* PASSED|### Test "[0-9]{4}[a-z0-9_]*)' |
    sed -E 's/^Test ([^ ]+) PASSED$/\1 PASSED/; s/^### Test "([^ "]+)$/\1 FAILED/' |
    sort -u | awk '{status[$1] = (status[$1] == "FAILED" || $2 == "FAILED") ? "FAILED" : "PASSED"}
      END {for (t in status) print t, status[t]}' | sort >"$work/status-$name"
}

case $cmd in
run)
  run_suite once "$@"
  cat "$work/status-once"
  echo "$(grep -c ' PASSED$' "$work/status-once" || true) passed, $(grep -c ' FAILED$' "$work/status-once" || true) failed"
  ;;
compare)
  run_suite plain
  run_suite idempotent -P
  join -a1 -a2 -e missing -o 0,1.2,2.2 "$work/status-plain" "$work/status-idempotent" |
    awk 'BEGIN {print "test without-P with-P"} {print}'
  lost=$(join -a1 -e missing -o 0,1.2,2.2 "$work/status-plain" "$work/status-idempotent" |
    awk '$2 == "PASSED" && $3 != "PASSED" {print $1}')
  echo "without -P: $(grep -c ' PASSED$' "$work/status-plain" || true) passed;" \
    "with -P: $(grep -c ' PASSED$' "$work/status-idempotent" || true) passed"
  if [[ -n $lost ]]; then
    echo "passing without -P, not with it: $lost"
    exit 1
  fi
  echo "every test passing without -P passes with it"
  ;;
*)
  echo "unknown command $cmd: run|compare" >&2
  exit 2
  ;;
esac
