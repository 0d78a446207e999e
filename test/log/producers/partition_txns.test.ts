import { existsSync, readdirSync } from "node:fs";
import t from "tap";
import { noProduceLimits } from "../../../src/log/batch/produced_batches.ts";
import { readRecordBatchHeader, RecordBatchError } from "../../../src/log/batch/record_batch.ts";
import { encodeTxnMarker } from "../../../src/log/batch/txn_marker.ts";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { ProducerRefusedError } from "../../../src/log/log_errors.ts";
import { Partition } from "../../../src/log/partition/partition.ts";
import type { PartitionLog } from "../../../src/log/partition/partition_log.ts";
import { ProducerStates } from "../../../src/log/producers/producer_states.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { chainConfig } from "../../helpers/chain_fixture.ts";
import { idempotentBatch, transactionalBatch } from "../../helpers/kafka/idempotent_batch.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// A partition's transactions: the last stable offset stays at the oldest open one, a marker from the
// coordinator completes it, an abort's entry goes to its segment's aborted-transaction index
// (`.txnindex` at the seal, rebuilt for the active segment at boot), and a read_committed fetch
// collects the aborts among its offsets.
await initCrc32c();
const disk = new NodeDisk();
/** About three one-record batches a segment. */
const config: LogConfig = { ...chainConfig, segmentSizeBytes: 200, indexIntervalBytes: 4096 };
const address = { streamId: 1, topicId: 1, partitionId: 0 };

const marker = (producerId: number, epoch: number, commit: boolean) =>
  encodeTxnMarker({ producerId, epoch, commit, coordinatorEpoch: 0, timestampMs: 1_700_000_000_000 });
const writeMarker = (log: PartitionLog, producerId: number, epoch: number, commit: boolean) =>
  log.appendRecordBatches(marker(producerId, epoch, commit), noProduceLimits, "coordinator");

t.test("the last stable offset stays at an open transaction; its abort is listed for read_committed", async (t) => {
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), tempDir(t), address, config);
  t.teardown(() => p.close());
  const log = p.log;
  await log.appendRecordBatches(idempotentBatch(5, 0, 0, 1));
  await log.appendRecordBatches(transactionalBatch(7, 0, 0, 2));
  await log.appendRecordBatches(transactionalBatch(8, 0, 0, 1));
  t.equal(log.lastStableOffset, 1, "producer 7's transaction from offset 1 is open");
  t.equal(log.highWatermark, 4);
  await writeMarker(log, 7, 0, false);
  t.equal(log.lastStableOffset, 3, "producer 8's is the oldest open now");
  await writeMarker(log, 8, 0, true);
  t.equal(log.lastStableOffset, log.highWatermark, "none open: the high watermark");
  t.same(await log.abortedTxns(0, log.highWatermark), [
    { producerId: 7, firstOffset: 1, lastOffset: 4, lastStableOffset: 3 },
  ]);
  t.same(await log.abortedTxns(5, log.highWatermark), [], "the abort's marker lies below the fetch");
  t.same(await log.abortedTxns(0, 1), [], "it began at the fetch's bound");
});

t.test("markers: an older epoch is refused, a producer sends none, and one fences the old epoch", async (t) => {
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), tempDir(t), address, config);
  t.teardown(() => p.close());
  const log = p.log;
  await log.appendRecordBatches(transactionalBatch(7, 2, 0, 1));
  const old = await writeMarker(log, 7, 1, true).catch((e) => e);
  t.ok(old instanceof ProducerRefusedError && old.refusal === "old_epoch", `${old}`);
  const client = await log.appendRecordBatches(marker(7, 2, true)).catch((e) => e);
  t.ok(client instanceof RecordBatchError && client.refusal === "unsupported", "a producer's control batch");
  t.match(client.message, /written by the transaction coordinator/);
  await writeMarker(log, 7, 3, false);
  const fenced = await log.appendRecordBatches(transactionalBatch(7, 2, 1, 1)).catch((e) => e);
  t.ok(fenced instanceof ProducerRefusedError && fenced.refusal === "old_epoch", "epoch 2 is fenced");
});

t.test("a marker of a coordinator older than the producer's last one is refused, and the refusal survives a reopen", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  const coordinated = (coordinatorEpoch: number, commit: boolean) =>
    p.log.appendRecordBatches(
      encodeTxnMarker({ producerId: 7, epoch: 0, commit, coordinatorEpoch, timestampMs: 1_700_000_000_000 }),
      noProduceLimits,
      "coordinator",
    );
  await p.log.appendRecordBatches(transactionalBatch(7, 0, 0, 1));
  await coordinated(5, true);
  const stale = await coordinated(4, false).catch((e) => e);
  t.ok(stale instanceof ProducerRefusedError && stale.refusal === "coordinator_fenced", `${stale}`);
  await coordinated(5, true);
  await p.close();
  const reopened = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.teardown(() => reopened.close());
  const again = await reopened.log.appendRecordBatches(
    encodeTxnMarker({
      producerId: 7,
      epoch: 0,
      commit: false,
      coordinatorEpoch: 4,
      timestampMs: 1_700_000_000_000,
    }),
    noProduceLimits,
    "coordinator",
  ).catch((e) => e);
  t.ok(
    again instanceof ProducerRefusedError && again.refusal === "coordinator_fenced",
    "recovered from the log",
  );
});

t.test("aborts are indexed in their segments: .txnindex at the seal, the active one rebuilt at boot", async (t) => {
  const data = tempDir(t);
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), data, address, config);
  const expected = [];
  for (let round = 0; round < 5; round++) {
    const first = p.log.nextOffset;
    await p.log.appendRecordBatches(transactionalBatch(7, 0, round, 1));
    await writeMarker(p.log, 7, 0, round % 2 === 1);
    if (round % 2 === 0) {
      expected.push({
        producerId: 7,
        firstOffset: first,
        lastOffset: first + 1,
        lastStableOffset: first + 2,
      });
    }
  }
  const end = p.log.highWatermark;
  t.ok(p.log.segments.length >= 3, `${p.log.segments.length} segments`);
  t.same(await p.log.abortedTxns(0, end), expected, "every abort, across segments");
  const files = readdirSync(p.dir).filter((n) => n.endsWith(".txnindex"));
  t.ok(files.length >= 1, `sealed segments with an abort have a .txnindex: ${files}`);
  await p.close();
  const reopened = await Partition.open(disk, new VirtualClock(), data, address, config, silentLogger());
  t.teardown(() => reopened.close());
  t.same(await reopened.log.abortedTxns(0, end), expected, "the same after a boot");
  t.same(
    await reopened.log.abortedTxns(expected[2]!.lastOffset, end),
    [expected[2]],
    "from the last abort's marker",
  );
  t.equal(reopened.log.lastStableOffset, end);
  t.ok(existsSync(`${reopened.dir}/${files[0]}`));
});

t.test("a completed transaction holds the last stable offset until its marker is below the high watermark", (t) => {
  const states = new ProducerStates("p");
  const header = readRecordBatchHeader;
  const txn = transactionalBatch(3, 0, 0, 2);
  states.recordBatch(txn, header(txn), 10);
  const end = marker(3, 0, true);
  states.recordBatch(end, header(end), 12);
  t.equal(states.firstUnstableOffset(), null, "nothing is open");
  t.equal(states.lastStableOffset(12), 10, "the marker at 12 is not replicated yet");
  t.equal(states.lastStableOffset(13), 13, "replicated: the high watermark");
  t.equal(states.lastStableOffset(12), 12, "and it stays released");
  const again = transactionalBatch(3, 0, 2, 1);
  states.recordBatch(again, header(again), 13);
  const abort = marker(3, 0, false);
  states.recordBatch(abort, header(abort), 14);
  states.truncateFrom(14);
  t.equal(states.lastStableOffset(14), 13, "a cut marker leaves its transaction open");
  t.end();
});

t.test("a read_committed poll leaves out aborted records and stops at the last stable offset", async (t) => {
  const p = await Partition.create(disk, new VirtualClock(), new Rng(1), tempDir(t), address, config);
  t.teardown(() => p.close());
  const log = p.log;
  await log.appendRecordBatches(idempotentBatch(5, 0, 0, 1)); // 0: plain
  await log.appendRecordBatches(transactionalBatch(7, 0, 0, 2)); // 1-2: aborted below
  await log.appendRecordBatches(transactionalBatch(8, 0, 0, 1)); // 3: committed below
  await log.appendRecordBatches(transactionalBatch(7, 0, 2, 1)); // 4: aborted below
  await writeMarker(log, 7, 0, false); // 5
  await writeMarker(log, 8, 0, true); // 6
  await log.appendRecordBatches(transactionalBatch(9, 0, 0, 1)); // 7: open
  await log.appendRecordBatches(idempotentBatch(5, 0, 1, 1)); // 8: plain, above the open one
  const offsets = async (read: Promise<{ messages: { offset: number }[]; nextOffset: number }>) => {
    const r = await read;
    return { offsets: r.messages.map((m) => m.offset), next: r.nextOffset };
  };
  t.same(
    await offsets(log.readCommitted(0, 100, 1 << 20)),
    { offsets: [0, 3], next: 7 },
    "committed, to the LSO",
  );
  t.same(
    (await offsets(log.read(0, 100, 1 << 20))).offsets,
    [0, 1, 2, 3, 4, 7, 8],
    "read_uncommitted reads every record, no marker",
  );
  await writeMarker(log, 9, 0, true); // 9
  t.same(
    await offsets(log.readCommitted(4, 100, 1 << 20)),
    { offsets: [7, 8], next: 9 },
    "and on once it commits",
  );
});
