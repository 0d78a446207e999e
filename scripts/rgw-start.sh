#!/usr/bin/env bash
# Adapted from shared/tools/ceph-rgw for Strata's tests: RGW_DATA and RGW_PORT pick a private instance.
# Start a throw-away single-node Ceph cluster (1 mon, 1 osd, 1 radosgw; no mgr,
# no systemd) bound to 127.0.0.1 only, and print S3 credentials.
# Needs (Debian 12): apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd curl
# Everything lives under $RGW_DATA (default /tmp/rgw/data); stop-rgw.sh --wipe removes it.
# Re-running on an existing data dir just (re)starts whatever is not running.
#
# Env: RGW_DATA, RGW_PORT (7480), OBJECTSTORE (bluestore|memstore),
#      RGW_STORE_BYTES (bluestore's sparse block file or memstore's memory, 10 GiB),
#      RGW_CPUS (a CPU list, e.g. "1": pins every daemon thread there) and RGW_IDLE=1 (SCHED_IDLE):
#      for benchmarks, so that the store on the same machine takes only what the measured process
#      leaves. Priority alone is not enough on a kernel without preemption (docs/BENCHMARKS.md,
#      "Against an S3 store").
#      S3_ACCESS_KEY / S3_SECRET_KEY (fixed test credentials).
set -euo pipefail

T0=$(date +%s%N)
D=${RGW_DATA:-/tmp/rgw/data}
PORT=${RGW_PORT:-7480}
STORE=${OBJECTSTORE:-bluestore}
STORE_BYTES=${RGW_STORE_BYTES:-10737418240}
CPUS=${RGW_CPUS:-}
IDLE=${RGW_IDLE:-}
AK=${S3_ACCESS_KEY:-TESTACCESSKEY0000001}
SK=${S3_SECRET_KEY:-testsecretkey0000000000000000000000000001}
CONF=$D/ceph.conf
C="ceph -c $CONF --connect-timeout 20"

log() { local ms=$(( ($(date +%s%N) - T0) / 1000000 )); printf '[%3d.%03ds] %s\n' $((ms / 1000)) $((ms % 1000)) "$*"; }
die() { echo "ERROR: $*" >&2; exit 1; }
# running = pid file names a live, non-zombie process
alive() { local st; [ -f "$1" ] && st=$(awk '{print $3}' "/proc/$(cat "$1")/stat" 2>/dev/null) && [ "$st" != Z ]; }
# run a daemon (it daemonizes itself); keep its pre-fork output
spawn() { local name=$1; shift; "$@" > "$D/log/$name.start.out" 2>&1 || { cat "$D/log/$name.start.out"; die "$name failed to start"; }; }

mkdir -p "$D"/{run,log,mon,osd}

if [ ! -f "$D/.initialized" ]; then
  rm -rf "${D:?}"/{run,log,mon,osd}/* "$D"/*.keyring "$D/monmap" "$CONF"
  FSID=$(uuidgen)
  cat > "$CONF" <<EOF
[global]
fsid = $FSID
mon_host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
public_network = 127.0.0.1/32
cluster_network = 127.0.0.1/32
ms_bind_ipv6 = false
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = $D/run
pid_file = $D/run/\$name.pid
admin_socket = $D/run/\$name.asok
log_file = $D/log/\$name.log
mon_cluster_log_file = $D/log/cluster.log
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_max_pg_per_osd = 1000
mon_data_avail_warn = 2
mon_data_avail_crit = 1
# commit map changes after 50 ms instead of 1 s: pool creation ~2 s -> ~0.2 s each
paxos_propose_interval = 0.05
[client]
keyring = $D/\$cluster.\$name.keyring
[mon]
mon_data = $D/mon/\$cluster-\$id
[osd]
osd_data = $D/osd/\$cluster-\$id
osd_objectstore = $STORE
# memstore only persists on a clean umount; bluestore is crash-consistent, fast shutdown is fine
osd_fast_shutdown = $([ "$STORE" = memstore ] && echo false || echo true)
osd_memory_target = 1073741824
bluestore_block_path = $D/osd/\$cluster-\$id/block.img
bluestore_block_size = $STORE_BYTES
bluestore_block_create = true
memstore_device_bytes = $STORE_BYTES
[client.rgw.a]
rgw_frontends = beast endpoint=127.0.0.1:$PORT
# A deleted object's data is reclaimed within seconds, not the default two hours, so a benchmark
# that deletes what it uploaded does not fill the block file.
rgw_gc_obj_min_wait = 0
rgw_gc_processor_period = 5
EOF
  log "mkfs mon (fsid $FSID)"
  ceph-authtool --create-keyring "$D/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool --create-keyring "$D/ceph.client.admin.keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
  ceph-authtool "$D/mon.keyring" --import-keyring "$D/ceph.client.admin.keyring" >/dev/null
  monmaptool --create --fsid "$FSID" --addv a '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' "$D/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$D/monmap" --keyring "$D/mon.keyring"
  NEW=1
else
  NEW=0
fi

alive "$D/run/mon.a.pid" || { log "start ceph-mon"; spawn mon.a ceph-mon -c "$CONF" -i a; }
for i in $(seq 1 60); do $C -s >/dev/null 2>&1 && break; sleep 0.25; done
$C -s >/dev/null 2>&1 || die "mon did not come up (see $D/log/mon.a.log)"
log "mon up"

if [ "$NEW" = 1 ]; then
  OSD_UUID=$(uuidgen)
  OSD_ID=$($C osd new "$OSD_UUID")
  [ "$OSD_ID" = 0 ] || die "unexpected osd id $OSD_ID"
  mkdir -p "$D/osd/ceph-0"
  $C auth get-or-create osd.0 mon 'allow profile osd' osd 'allow *' mgr 'allow profile osd' \
    -o "$D/osd/ceph-0/keyring"
  log "mkfs osd.0 ($STORE)"
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" > "$D/log/osd-mkfs.log" 2>&1 \
    || { cat "$D/log/osd-mkfs.log"; die "osd mkfs failed"; }
  $C auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' mgr 'allow rw' \
    -o "$D/ceph.client.rgw.a.keyring"
fi

alive "$D/run/osd.0.pid" || { log "start ceph-osd"; spawn osd.0 ceph-osd -c "$CONF" -i 0; }
osd_active() { ceph --admin-daemon "$D/run/osd.0.asok" status 2>/dev/null | grep -q '"state": "active"'; }
for i in $(seq 1 240); do osd_active && break; sleep 0.25; done
osd_active || die "osd.0 did not become active (see $D/log/osd.0.log)"
log "osd.0 up"

if [ "$NEW" = 1 ]; then
  # pre-create the pools RGW would otherwise create lazily on the first bucket/object
  for pool in default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec; do
    $C osd pool create "$pool" 8 8 >/dev/null 2>&1
    $C osd pool application enable "$pool" rgw >/dev/null 2>&1
  done
  log "rgw bucket pools created"
fi

alive "$D/run/client.rgw.a.pid" || { log "start radosgw"; spawn client.rgw.a radosgw -c "$CONF" -n client.rgw.a; }
for i in $(seq 1 240); do
  curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null && break; sleep 0.25
done
curl -fsS -o /dev/null "http://127.0.0.1:$PORT/" || die "radosgw not answering (see $D/log/client.rgw.a.log)"
log "radosgw answering on http://127.0.0.1:$PORT"

if [ "$NEW" = 1 ]; then
  radosgw-admin -c "$CONF" -n client.admin user create --uid=test --display-name="Test User" \
    --access-key="$AK" --secret-key="$SK" >/dev/null
  touch "$D/.initialized"
  log "S3 user created"
fi

# Threads the daemons start later inherit both settings from the thread that starts them.
for f in "$D"/run/mon.a.pid "$D"/run/osd.0.pid "$D"/run/client.rgw.a.pid; do
  pid=$(cat "$f")
  [ -n "$CPUS" ] && taskset -a -c -p "$CPUS" "$pid" >/dev/null
  if [ "$IDLE" = 1 ]; then for t in /proc/"$pid"/task/*; do chrt -i -p 0 "${t##*/}"; done; fi
done
[ -n "$CPUS$IDLE" ] && log "daemons on CPUs ${CPUS:-all}${IDLE:+, SCHED_IDLE}"

echo "S3_ENDPOINT=http://127.0.0.1:$PORT"
echo "S3_ACCESS_KEY=$AK"
echo "S3_SECRET_KEY=$SK"
echo "PIDS: mon=$(cat "$D/run/mon.a.pid") osd=$(cat "$D/run/osd.0.pid") rgw=$(cat "$D/run/client.rgw.a.pid")"
log "ready"
