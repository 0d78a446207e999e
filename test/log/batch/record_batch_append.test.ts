import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import {
  batchField,
  type BatchRecord,
  computeBatchCrc,
  encodeRecordBatch,
  RecordBatchError,
  validateRecordBatch,
} from "../../../src/log/batch/record_batch.ts";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { PartitionLog } from "../../../src/log/partition/partition_log.ts";
import { recoverSegments } from "../../../src/log/segment/recover_segments.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// Kafka record batches appended as producers send them: kept byte for byte but for the base
// offset, refused whole when any check fails, stamped when the topic keeps log append time.
await initCrc32c();
const disk = new NodeDisk();
const config: LogConfig = {
  segmentSizeBytes: 1 << 20,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 256,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const utf8 = new TextEncoder();

function record(i: number, timestampDelta = 0): BatchRecord {
  return {
    offsetDelta: i,
    timestampDelta,
    key: utf8.encode(`key-${i}`),
    value: i % 2 === 0 ? utf8.encode(`value-${i}`) : null,
    headers: [{ name: "h", value: utf8.encode("1") }, { name: "h", value: null }],
  };
}

/** A producer's batch: base offset 0, its own timestamps. */
function producerBatch(count: number, baseTimestampMs: number, deltas: number[] = []): Uint8Array {
  const records = Array.from({ length: count }, (_, i) => record(i, deltas[i] ?? 0));
  const maxTimestampMs = baseTimestampMs + Math.max(0, ...deltas);
  return encodeRecordBatch(records, {
    baseOffset: 0,
    baseTimestampMs,
    maxTimestampMs,
    timestampType: "create_time",
  });
}

async function openLog(t: Test, overrides: Partial<LogConfig> = {}) {
  const dir = tempDir(t);
  const clock = new VirtualClock(0, 1_800_000_000_000);
  const log = new PartitionLog(
    disk,
    dir,
    clock,
    { ...config, ...overrides },
    [await PartitionLog.createSegment(disk, dir, 0)],
    "t",
  );
  t.teardown(() => log.close());
  return { dir, clock, log, logFile: () => readFileSync(`${dir}/${"0".padStart(20, "0")}.log`) };
}

const joined = (...parts: Uint8Array[]) => new Uint8Array(parts.flatMap((p) => [...p]));

t.test("batches are stored as sent but for their base offsets, at consecutive offsets", async (t) => {
  const { dir, log, logFile } = await openLog(t);
  const first = producerBatch(3, 1_700_000_000_000, [0, 5, 2]);
  const second = producerBatch(2, 1_700_000_000_100);
  t.same(await log.appendRecordBatches(joined(first, second)), { baseOffset: 0, count: 5 });
  t.same(await log.appendRecordBatches(producerBatch(1, 1_700_000_000_200)), {
    baseOffset: 5,
    count: 1,
  });
  const stored = logFile();
  const expected = joined(first, second);
  new DataView(expected.buffer).setBigInt64(first.length + batchField.baseOffset, 3n);
  t.ok(
    Buffer.from(expected).equals(stored.subarray(0, expected.length)),
    "byte for byte, the second batch's base offset set to 3",
  );
  t.equal(
    validateRecordBatch(stored.subarray(0, first.length)).crc,
    validateRecordBatch(first).crc,
    "CRC untouched",
  );

  await log.close();
  const report = await recoverSegments(disk, dir, config.indexIntervalBytes, "t", silentLogger());
  const active = report.segments.at(-1)!;
  t.equal(active.endOffset, 5, "recovery reads the batches back");
  t.equal(active.maxTimestampUs, 1_700_000_000_200_000, "the largest timestamp, not the last batch's base");
});

t.test("a refused batch appends nothing, even after good ones in the same produce", async (t) => {
  const { log, logFile } = await openLog(t);
  const good = producerBatch(2, 1_700_000_000_000);
  const corrupt = producerBatch(2, 1_700_000_000_000);
  corrupt[corrupt.length - 1]! ^= 0x01;
  const idempotent = producerBatch(1, 1_700_000_000_000);
  new DataView(idempotent.buffer).setBigInt64(batchField.producerId, 7n);
  new DataView(idempotent.buffer).setUint32(batchField.crc, computeBatchCrc(idempotent));
  const transactional = producerBatch(1, 1_700_000_000_000);
  new DataView(transactional.buffer).setInt16(batchField.attributes, 0x10);
  new DataView(transactional.buffer).setUint32(batchField.crc, computeBatchCrc(transactional));
  const control = producerBatch(1, 1_700_000_000_000);
  new DataView(control.buffer).setInt16(batchField.attributes, 0x30);
  new DataView(control.buffer).setUint32(batchField.crc, computeBatchCrc(control));
  const negative = encodeRecordBatch([record(0)], {
    baseOffset: 0,
    baseTimestampMs: -1,
    maxTimestampMs: -1,
    timestampType: "create_time",
  });
  const cases = [
    [joined(good, corrupt), "corrupt", /CRC32C/],
    [idempotent, "corrupt", /producer id 7 with epoch -1 and sequence -1 is no idempotent producer's batch/],
    [
      transactional,
      "corrupt",
      /producer id -1 with epoch -1 and sequence -1 is no idempotent producer's batch/,
    ],
    [control, "unsupported", /control batches are written by the transaction coordinator/],
    [negative, "timestamp", /not a range of times/],
    [good.subarray(0, 40), "corrupt", /not a batch/],
    [joined(good, new Uint8Array(10)), "corrupt", /not a batch/],
  ] as const;
  for (const [records, refusal, message] of cases) {
    const error = await log.appendRecordBatches(records).catch((e) => e);
    t.ok(error instanceof RecordBatchError, `${refusal}: a RecordBatchError`);
    t.equal(error.refusal, refusal);
    t.match(error.message, message);
  }
  t.equal(logFile().length, 0, "nothing was written");
  t.same(
    await log.appendRecordBatches(good),
    { baseOffset: 0, count: 2 },
    "the next good one is offset 0",
  );
});

t.test("log append time: the server stamps the max timestamp and the type bit, and the CRC holds", async (t) => {
  const { clock, log, logFile } = await openLog(t, { timestampType: "log_append_time" });
  clock.advance(1234.7);
  await log.appendRecordBatches(producerBatch(2, 1_600_000_000_000));
  const header = validateRecordBatch(logFile());
  t.equal(header.timestampType, "log_append_time");
  t.equal(header.maxTimestampMs, 1_800_000_001_234, "now, in whole milliseconds");
  t.equal(header.baseTimestampMs, 1_600_000_000_000, "the producer's base timestamp stays");
  const read = await log.read(0, 10, 1 << 20);
  t.same(read.messages.map((m) => m.timestampMs), [1_800_000_001_234, 1_800_000_001_234]);
  clock.advance(10);
  await log.append([{ key: null, headers: {}, payload: null, timestampMs: 5 }]);
  const stamped = await log.read(2, 10, 1 << 20);
  t.same(
    stamped.messages.map((m) => m.timestampMs),
    [1_800_000_001_244],
    "a message's own time gives way too",
  );
});

t.test("create time: the producer's timestamps are kept as sent", async (t) => {
  const { log, logFile } = await openLog(t);
  await log.appendRecordBatches(producerBatch(1, 1_600_000_000_000));
  const header = validateRecordBatch(logFile());
  t.equal(header.timestampType, "create_time");
  t.equal(header.maxTimestampMs, 1_600_000_000_000);
});

t.test("producer timestamps out of order: the index never decreases and a lookup finds the first record at the time", async (t) => {
  const { log } = await openLog(t);
  // Batches of 20 records (about 500 bytes, so an index entry every batch or so), their times
  // going 1000 s, 3000 s, 2000 s, 4000 s.
  for (const baseS of [1000, 3000, 2000, 4000]) {
    await log.appendRecordBatches(
      producerBatch(20, baseS * 1000, Array.from({ length: 20 }, (_, i) => i)),
    );
  }
  const entries = log.stats().segments.length;
  t.equal(entries, 1);
  const found = await log.readFromTimestamp(2_500_000_000, 1, 1 << 20);
  t.equal(found.messages[0]!.offset, 20, "the first record at or after 2500 s is the second batch's first");
  const exact = await log.readFromTimestamp(3_000_005_000, 1, 1 << 20);
  t.equal(exact.messages[0]!.offset, 25, "within a batch, by its records' deltas");
  const late = await log.readFromTimestamp(2_000_019_000, 1, 1 << 20);
  t.equal(
    late.messages[0]!.offset,
    20,
    "an earlier time found in the first batch that reaches it, in log order",
  );
});

/** A batch of one record whose value is `valueBytes` long. */
function sizedBatch(valueBytes: number, fill: number): Uint8Array {
  return encodeRecordBatch([{
    offsetDelta: 0,
    timestampDelta: 0,
    key: null,
    value: new Uint8Array(valueBytes).fill(fill),
    headers: [],
  }], {
    baseOffset: 0,
    baseTimestampMs: 1_700_000_000_000,
    maxTimestampMs: 1_700_000_000_000,
    timestampType: "create_time",
  });
}

t.test("a produce's checks run in pieces of about 1 MiB, a turn between them", async (t) => {
  const { log } = await openLog(t, { segmentSizeBytes: 64 << 20 });
  const batches = Array.from({ length: 8 }, (_, i) => sizedBatch(300 * 1024, i));
  let turns = 0;
  const result = await log.appendRecordBatches(new Uint8Array(batches.flatMap((b) => [...b])), {
    batchBytesMax: 1 << 20,
    turn: () => {
      turns++;
      return Promise.resolve();
    },
  });
  t.same(result, { baseOffset: 0, count: 8 });
  // Three batches of 300 KiB fit in a piece of 1 MiB, a fourth does not: pieces of 3, 3 and 2.
  t.equal(turns, 2, "two turns for eight batches of 300 KiB");
  const one = await log.appendRecordBatches(sizedBatch(300 * 1024, 9), {
    batchBytesMax: 1 << 20,
    turn: () => Promise.reject(new Error("a single piece takes no turn")),
  });
  t.same(one, { baseOffset: 8, count: 1 });
});

t.test("a batch over batchBytesMax is refused as too large, and none of the produce is appended", async (t) => {
  const { log } = await openLog(t);
  const records = new Uint8Array([...sizedBatch(1000, 1), ...sizedBatch(5000, 2)]);
  let turns = 0;
  const error = await log.appendRecordBatches(records, {
    batchBytesMax: 4096,
    turn: () => Promise.resolve(void turns++),
  }).catch((e) => e);
  t.ok(error instanceof RecordBatchError);
  t.equal(error.refusal, "too_large");
  t.match(error.message, /larger than the topic's max_message_bytes, 4096/);
  t.equal(turns, 0, "refused before any batch is checked");
  t.equal(log.nextOffset, 0, "nothing appended");
});
