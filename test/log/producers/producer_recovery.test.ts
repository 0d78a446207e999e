import { readdirSync, rmSync, writeFileSync } from "node:fs";
import t from "tap";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { Partition } from "../../../src/log/partition/partition.ts";
import { ProducerRefusedError } from "../../../src/log/log_errors.ts";
import { producerSnapshotsKept } from "../../../src/log/producers/producer_snapshots.ts";
import type { ProducerStates } from "../../../src/log/producers/producer_states.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { chainConfig } from "../../helpers/chain_fixture.ts";
import { idempotentBatch } from "../../helpers/kafka/idempotent_batch.ts";

// A partition's idempotent producers survive a restart: a snapshot at every roll, and the active
// segment's batches after it replayed at boot. A truncation and a purge leave no snapshot that
// holds batches the log no longer has.
await initCrc32c();
const disk = new NodeDisk();
/** About three one-record batches a segment. */
const config: LogConfig = { ...chainConfig, segmentSizeBytes: 200, indexIntervalBytes: 4096 };
const address = { streamId: 1, topicId: 1, partitionId: 0 };

const stateOf = (states: ProducerStates) => states.snapshot().sort((a, b) => a.producerId - b.producerId);
const snapshotsIn = (dir: string) => readdirSync(dir).filter((n) => n.endsWith(".producers")).sort();

/** A partition where producer 9 wrote batches of one record at sequences 0 to `batches - 1`, producer 12 one of two. */
async function producedPartition(data: string, batches: number) {
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  await p.log.appendRecordBatches(idempotentBatch(12, 0, 0, 2));
  for (let s = 0; s < batches; s++) await p.log.appendRecordBatches(idempotentBatch(9, 0, s, 1));
  return p;
}

const reopen = async (data: string) => {
  const p = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.teardown(() => p.close());
  return p;
};

t.test("a restart keeps every producer's epoch and last batches: retries are still duplicates", async (t) => {
  const data = tempDir(t);
  const p = await producedPartition(data, 10);
  const before = stateOf(p.log.producers);
  t.ok(p.log.segments.length >= 3, `${p.log.segments.length} segments: rolls wrote snapshots`);
  await p.close();
  const snapshots = snapshotsIn(p.dir);
  t.ok(snapshots.length >= 1 && snapshots.length <= producerSnapshotsKept, `kept: ${snapshots}`);
  const reopened = await reopen(data);
  t.same(stateOf(reopened.log.producers), before, "the same state after the boot");
  const next = reopened.log.nextOffset;
  t.same(await reopened.log.appendRecordBatches(idempotentBatch(9, 0, 9, 1)), {
    baseOffset: next - 1,
    count: 1,
  });
  t.same(
    await reopened.log.appendRecordBatches(idempotentBatch(9, 0, 5, 1)),
    { baseOffset: 7, count: 1 },
    "a retry of a batch in a sealed segment, within the last five",
  );
  t.same(await reopened.log.appendRecordBatches(idempotentBatch(12, 0, 0, 2)), { baseOffset: 0, count: 2 });
  t.equal(reopened.log.nextOffset, next, "nothing appended twice");
  const gap = await reopened.log.appendRecordBatches(idempotentBatch(9, 0, 11, 1)).catch((e) => e);
  t.ok(gap instanceof ProducerRefusedError && gap.refusal === "out_of_order", "a gap after the boot");
});

t.test("a damaged newest snapshot is passed over for the one before it", async (t) => {
  const data = tempDir(t);
  const p = await producedPartition(data, 10);
  const before = stateOf(p.log.producers);
  await p.close();
  const snapshots = snapshotsIn(p.dir);
  t.equal(snapshots.length, producerSnapshotsKept);
  writeFileSync(`${p.dir}/${snapshots.at(-1)}`, "damaged");
  const reopened = await reopen(data);
  t.same(snapshotsIn(p.dir), snapshots.slice(0, -1), "the damaged one is deleted");
  t.same(stateOf(reopened.log.producers), before, "the sealed segment after the older one is replayed");
  // Producer 12's only batch is older than both snapshots: the older one still holds it.
  t.same(await reopened.log.appendRecordBatches(idempotentBatch(12, 0, 0, 2)), { baseOffset: 0, count: 2 });
});

t.test("a truncation deletes the snapshots past its cut; a cut batch is never taken for a duplicate", async (t) => {
  const data = tempDir(t);
  const p = await producedPartition(data, 10);
  await p.log.truncateTo(4);
  t.ok(snapshotsIn(p.dir).every((n) => Number(n.slice(0, 20)) <= 4), `left: ${snapshotsIn(p.dir)}`);
  const below = (states: ProducerStates) =>
    states.snapshot().every((e) => e.batches.every((b) => b.lastOffset < 4));
  t.ok(below(p.log.producers), "in memory, no batch at or past the cut");
  await p.close();
  const reopened = await reopen(data);
  t.ok(below(reopened.log.producers), "after a boot, no batch at or past the cut");
  t.same(
    await reopened.log.appendRecordBatches(idempotentBatch(9, 0, 2, 1)),
    { baseOffset: 4, count: 1 },
    "a batch the cut took is appended again, not answered as a duplicate",
  );
});

t.test("a purge deletes every snapshot and forgets every producer", async (t) => {
  const data = tempDir(t);
  const p = await producedPartition(data, 10);
  await p.purge();
  t.same(snapshotsIn(p.dir), []);
  t.equal(p.log.producers.size, 0);
  await p.close();
  const reopened = await reopen(data);
  t.equal(reopened.log.producers.size, 0);
  t.same(await reopened.log.appendRecordBatches(idempotentBatch(9, 0, 3, 1)), { baseOffset: 0, count: 1 });
});

t.test("a tiered partition holds each snapshot above its floor for its segment's upload", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  t.teardown(() => p.close());
  p.log.holdProducerSnapshotsAbove(0);
  for (let s = 0; s < 12; s++) await p.log.appendRecordBatches(idempotentBatch(9, 0, s, 1));
  const offsetsOf = () => snapshotsIn(p.dir).map((n) => Number(n.slice(0, 20)));
  const boundaries = p.log.segments.slice(1).map((s) => s.startOffset);
  t.ok(boundaries.length > producerSnapshotsKept, `${boundaries.length} rolls`);
  t.same(offsetsOf(), boundaries, "one snapshot where each segment ends, none let go");
  const floor = boundaries[1]!;
  p.log.holdProducerSnapshotsAbove(floor);
  const rolls = p.log.segments.length;
  // Each pass appends one batch: a segment holds about three.
  for (let s = 12; p.log.segments.length === rolls && s < 20; s++) {
    await p.log.appendRecordBatches(idempotentBatch(9, 0, s, 1));
  }
  t.same(
    offsetsOf(),
    p.log.segments.slice(1).map((s) => s.startOffset).filter((o) => o > floor),
    "at the next roll, those at or below the floor go",
  );
});

t.test("a snapshot older than evicted segments is not trusted: only the local batches after them are replayed", async (t) => {
  const data = tempDir(t);
  const p = await producedPartition(data, 10);
  const active = p.log.segments.at(-1)!.startOffset;
  const sb = p.superblock;
  const identity = { createdRevision: sb.createdRevision, purgeGeneration: sb.purgeGeneration };
  // A pass evicts a bounded number of segments: passes until every sealed one is remote.
  for (let passes = 0; passes < p.log.segments.length; passes++) {
    if (await p.log.evictLocal(active, identity, () => false) === 0) break;
  }
  t.ok(p.log.segments.slice(0, -1).every((s) => s.location === "remote"), "every sealed segment evicted");
  const nine = p.log.producers.snapshot().find((e) => e.producerId === 9)!;
  const batchesAtActive = nine.batches.filter((b) => b.firstOffset >= active);
  t.ok(
    batchesAtActive.length > 0 && batchesAtActive.length < 5,
    "some of producer 9's last batches are local",
  );
  await p.close();
  rmSync(`${p.dir}/${snapshotsIn(p.dir).at(-1)}`);
  const reopened = await reopen(data);
  t.same(
    reopened.log.producers.snapshot().map((e) => [e.producerId, e.batches.map((b) => b.firstOffset)]),
    [[9, batchesAtActive.map((b) => b.firstOffset)]],
    "producer 12, whose only batch is in an evicted segment, is unknown; 9 has the active segment's batches",
  );
  t.same(
    await reopened.log.appendRecordBatches(idempotentBatch(12, 0, 5, 1)),
    { baseOffset: reopened.log.nextOffset - 1, count: 1 },
    "an unknown producer starts at any sequence",
  );
});
