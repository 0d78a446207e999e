#!/usr/bin/env bash
# Adapted from shared/tools/ceph-rgw for Strata's tests: RGW_DATA and RGW_PORT pick a private instance.
# Stop the daemons started by start-rgw.sh, by the PIDs in their pid files
# (radosgw, then osd, then mon). `--wipe` also deletes the data dir.
set -uo pipefail
D=${RGW_DATA:-/tmp/rgw/data}
T0=$(date +%s%N)
ms() { local m=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%03ds' $((m / 1000)) $((m % 1000)); }

# running = exists and is not a zombie (an exited daemon stays a zombie until PID 1 reaps it)
running() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }

stop_pid() { # name pidfile
  local f=$2 pid t
  t=$(date +%s%N)
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if running "$pid"; then
    kill -TERM "$pid"
    for i in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then
      echo "$1 (pid $pid) did not exit after 30s, sending SIGKILL"; kill -KILL "$pid"
    fi
    echo "stopped $1 (pid $pid) in $(ms "$t")"
  fi
  rm -f "$f"
}

stop_pid radosgw "$D/run/client.rgw.a.pid"
stop_pid ceph-osd "$D/run/osd.0.pid"
stop_pid ceph-mon "$D/run/mon.a.pid"
echo "stop took $(ms "$T0")"
if [ "${1:-}" = --wipe ]; then rm -rf "${D:?}"; echo "wiped $D"; fi
