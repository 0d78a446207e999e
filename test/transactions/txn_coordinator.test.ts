import t from "tap";
import { NotEnoughReplicasError } from "../../src/broker/broker_errors.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import {
  decodeTxnRecord,
  encodeTxnRecord,
  type TxnLogRecord,
} from "../../src/transactions/log/txn_records.ts";
import { txnPartitionOf } from "../../src/transactions/log/txn_load.ts";
import {
  markerRetryMs,
  TxnCoordinator,
  type TxnMarkerRequest,
} from "../../src/transactions/txn_coordinator.ts";
import { MemoryInternalLog } from "../helpers/memory_internal_log.ts";
import { Registry } from "prom-client";
import { registerTxnMetrics } from "../../src/transactions/txn_metrics.ts";

/** Lets the promises the coordinator started (a load, an append, a marker write) run to their end. */
const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

class RecordingMarkers {
  written: TxnMarkerRequest[] = [];
  failures = 0;
  write(request: TxnMarkerRequest): Promise<void> {
    if (this.failures > 0) {
      this.failures -= 1;
      return Promise.reject(new NotEnoughReplicasError("the partition has too few replicas in sync", false));
    }
    this.written.push(request);
    return Promise.resolve();
  }
}

const txnCodec = { encode: encodeTxnRecord, decode: decodeTxnRecord };

function coordinatorOn(log = new MemoryInternalLog<TxnLogRecord>(2, txnCodec), checkpointBytes = 1 << 20) {
  const clock = new VirtualClock();
  const markers = new RecordingMarkers();
  let nextProducerId = 1000;
  const coordinator = new TxnCoordinator({
    log,
    clock,
    logger: silentLogger(),
    settings: {
      transactionMaxTimeoutMs: 60_000,
      transactionalIdExpirationMs: 3_600_000,
      partitionsPerTransactionMax: 8,
      transactionalIdsMax: 16,
      openTransactionsMax: 8,
      checkpointBytes,
    },
    producerIds: { next: () => Promise.resolve(nextProducerId++) },
    markers,
  });
  return { coordinator, clock, markers, log };
}

async function loaded(log?: MemoryInternalLog<TxnLogRecord>, checkpointBytes?: number) {
  const made = coordinatorOn(log, checkpointBytes);
  made.coordinator.onTick(made.clock.nowMs());
  await flush();
  return made;
}

const init = (transactionalId: string, timeoutMs = 10_000) => ({
  transactionalId,
  timeoutMs,
  expected: null,
});

t.test("a transaction from InitProducerId to its commit: records, markers, completion", async (t) => {
  const { coordinator, markers, log } = await loaded();
  const started = await coordinator.init(init("tx"));
  t.same(
    started,
    { error: "none", producerId: 1000, epoch: 0 },
    "a new id takes a fresh producer id at epoch 0",
  );
  const pid = started.producerId;
  const add = await coordinator.add({
    transactionalId: "tx",
    producerId: pid,
    epoch: 0,
    partitions: ["orders:1"],
  });
  t.equal(add.error, "none");
  const again = await coordinator.add({
    transactionalId: "tx",
    producerId: pid,
    epoch: 0,
    partitions: ["orders:1"],
  });
  t.equal(again.error, "none", "a partition already in the transaction is answered at once");
  const end = await coordinator.end({ transactionalId: "tx", producerId: pid, epoch: 0, commit: true });
  t.equal(end.error, "none", "the commit is answered once its decision is written");
  await flush();
  t.same(markers.written, [{
    producerId: pid,
    epoch: 0,
    commit: true,
    coordinatorEpoch: 0,
    partitions: ["orders:1"],
  }]);
  const phases = log.records(txnPartitionOf("tx", 2)).map((r) => r.value?.phase);
  t.same(phases, ["empty", "ongoing", "prepare_commit", "complete_commit"], "each transition is a record");
  const retried = await coordinator.end({ transactionalId: "tx", producerId: pid, epoch: 0, commit: true });
  t.equal(retried.error, "none", "a retried commit of a complete one is answered none");
});

t.test("a new producer with the id fences the old one: its transaction is aborted at a bumped epoch", async (t) => {
  const { coordinator, markers } = await loaded();
  const { producerId } = await coordinator.init(init("tx"));
  await coordinator.add({
    transactionalId: "tx",
    producerId,
    epoch: 0,
    partitions: ["orders:0", "orders:2"],
  });
  const fencing = await coordinator.init(init("tx"));
  t.equal(fencing.error, "concurrent_transactions", "the new producer asks again once the abort is complete");
  await flush();
  t.same(markers.written.map((m) => [m.commit, m.epoch, m.partitions]), [[false, 1, [
    "orders:0",
    "orders:2",
  ]]]);
  const old = await coordinator.end({ transactionalId: "tx", producerId, epoch: 0, commit: true });
  t.equal(old.error, "producer_fenced", "the old producer's commit is fenced");
  const next = await coordinator.init(init("tx"));
  t.same(next, { error: "none", producerId, epoch: 2 }, "the new producer takes the epoch after the fence's");
});

t.test("a transaction past its timeout is aborted from the tick", async (t) => {
  const { coordinator, clock, markers } = await loaded();
  const { producerId } = await coordinator.init(init("slow", 1000));
  await coordinator.add({ transactionalId: "slow", producerId, epoch: 0, partitions: ["orders:3"] });
  clock.advance(999);
  coordinator.onTick(clock.nowMs());
  await flush();
  t.equal(markers.written.length, 0, "not before its timeout");
  clock.advance(2);
  coordinator.onTick(clock.nowMs());
  await flush();
  t.equal(coordinator.timedOut, 1);
  t.same(markers.written.map((m) => [m.commit, m.epoch]), [[false, 1]], "aborted at a bumped epoch");
  const late = await coordinator.end({ transactionalId: "slow", producerId, epoch: 0, commit: true });
  t.equal(late.error, "producer_fenced");
});

t.test("markers that fail are written again after markerRetryMs, and only then does the end complete", async (t) => {
  const { coordinator, clock, markers, log } = await loaded();
  const { producerId } = await coordinator.init(init("tx"));
  await coordinator.add({ transactionalId: "tx", producerId, epoch: 0, partitions: ["orders:0"] });
  markers.failures = 1;
  await coordinator.end({ transactionalId: "tx", producerId, epoch: 0, commit: false });
  await flush();
  t.equal(markers.written.length, 0, "the first write failed");
  const busy = await coordinator.init(init("tx"));
  t.equal(busy.error, "concurrent_transactions", "the id waits for its markers");
  clock.advance(markerRetryMs);
  await flush();
  t.equal(markers.written.length, 1, "written on the second attempt");
  t.equal(log.records(txnPartitionOf("tx", 2)).at(-1)?.value?.phase, "complete_abort");
});

t.test("a new coordinator writes the markers of an end decided before it, and refuses while it loads", async (t) => {
  const log = new MemoryInternalLog<TxnLogRecord>(2, txnCodec);
  const index = txnPartitionOf("tx", 2);
  await log.append(index, [{
    transactionalId: "tx",
    value: {
      transactionalId: "tx",
      producerId: 7,
      producerEpoch: 3,
      timeoutMs: 10_000,
      phase: "prepare_commit",
      partitions: ["orders:1"],
      startedAtMs: 0,
      updatedAtMs: 0,
    },
  }]);
  log.epochs[index] = 4;
  const { coordinator, clock, markers } = coordinatorOn(log);
  t.equal(coordinator.route("tx").error, "coordinator_load_in_progress", "nothing is loaded before the tick");
  coordinator.onTick(clock.nowMs());
  await flush();
  t.same(markers.written, [{
    producerId: 7,
    epoch: 3,
    commit: true,
    coordinatorEpoch: 4,
    partitions: ["orders:1"],
  }]);
  t.equal(log.records(index).at(-1)?.value?.phase, "complete_commit");
  log.epochs[index] = null;
  t.equal(coordinator.route("tx").error, "not_coordinator", "another node leads the partition");
});

t.test("a failed append answers with the coordinator's code; a lost leadership answers what waits", async (t) => {
  const { coordinator, clock, log } = await loaded();
  log.failNext = new NotEnoughReplicasError("too few replicas in sync", false);
  t.equal((await coordinator.init(init("tx"))).error, "coordinator_not_available");
  const { producerId, epoch } = await coordinator.init(init("tx"));
  let release!: () => void;
  log.gate = new Promise<void>((resolve) => (release = resolve));
  const waiting = coordinator.add({ transactionalId: "tx", producerId, epoch, partitions: ["orders:0"] });
  await flush();
  log.epochs[txnPartitionOf("tx", 2)] = null;
  clock.advance(1000);
  coordinator.onTick(clock.nowMs());
  t.equal((await waiting).error, "not_coordinator", "the request that waited hears the leadership is gone");
  release();
  await flush();
});

t.test("a checkpoint writes each id's record again and trims what is below it", async (t) => {
  const { coordinator, log } = await loaded(undefined, 200);
  for (let round = 0; round < 4; round++) {
    const { producerId, epoch } = await coordinator.init(init("tx"));
    await coordinator.add({ transactionalId: "tx", producerId, epoch, partitions: ["orders:0"] });
    await coordinator.end({ transactionalId: "tx", producerId, epoch, commit: true });
    await flush();
  }
  const index = txnPartitionOf("tx", 2);
  t.ok(log.trims.length >= 1, "the partition was trimmed");
  const records = log.records(index);
  t.ok(records.length < 16, `${records.length} records are left of 16 written`);
  const reloaded = await loaded(log);
  const next = await reloaded.coordinator.init(init("tx"));
  t.same([next.error, next.epoch], ["none", 4], "the state read back is the state written");
});

t.test("the metrics: ids and open transactions from the state, ends by result, timeouts, marker failures", async (t) => {
  const { coordinator, clock, markers } = await loaded();
  const registry = new Registry();
  registerTxnMetrics(registry, coordinator);
  const a = await coordinator.init(init("a", 1000));
  const b = await coordinator.init(init("b"));
  await coordinator.add({
    transactionalId: "a",
    producerId: a.producerId,
    epoch: 0,
    partitions: ["orders:0"],
  });
  await coordinator.add({
    transactionalId: "b",
    producerId: b.producerId,
    epoch: 0,
    partitions: ["orders:1"],
  });
  t.same(coordinator.gauges(), { transactionalIds: 2, openTransactions: 2 });
  markers.failures = 1;
  await coordinator.end({ transactionalId: "b", producerId: b.producerId, epoch: 0, commit: true });
  await flush();
  clock.advance(markerRetryMs);
  await flush();
  clock.advance(1000);
  coordinator.onTick(clock.nowMs());
  await flush();
  const text = await registry.metrics();
  const value = (line: string) => Number(new RegExp(`^${line} (\\S+)$`, "m").exec(text)?.[1]);
  t.equal(value("strata_txn_transactional_ids"), 2);
  t.equal(value("strata_txn_open_transactions"), 0, "b committed, a aborted at its timeout");
  t.equal(value('strata_txn_ended_total{result="commit"}'), 1);
  t.equal(value('strata_txn_ended_total{result="abort"}'), 1);
  t.equal(value("strata_txn_timed_out_total"), 1);
  t.equal(value("strata_txn_marker_failures_total"), 1);
});

t.test("the load-time metrics: completed loads of the partition led here, their total and longest time", async (t) => {
  const log = new MemoryInternalLog<TxnLogRecord>(1, txnCodec);
  const { coordinator, clock } = coordinatorOn(log);
  const registry = new Registry();
  registerTxnMetrics(registry, coordinator);
  const replay = log.replay.bind(log);
  log.replay = async (partition, visit) => {
    const replayed = await replay(partition, visit);
    clock.advance(250);
    return replayed;
  };
  coordinator.onTick(clock.nowMs());
  await flush();
  t.same(coordinator.loads, { count: 1, totalMs: 250, maxMs: 250 }, "the load, as the clock measured it");
  const text = await registry.metrics();
  const value = (line: string) => Number(new RegExp(`^${line} (\\S+)$`, "m").exec(text)?.[1]);
  t.equal(value("strata_txn_partition_loads_total"), 1);
  t.equal(value("strata_txn_partition_load_seconds_total"), 0.25);
  t.equal(value("strata_txn_partition_load_seconds_max"), 0.25);
});
