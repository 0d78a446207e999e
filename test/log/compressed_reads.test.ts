import t, { type Test } from "tap";
import { gzipSync } from "node:zlib";
import {
  decompressedRecordsBytesMax,
  decompressionPieceBytes,
} from "../../src/log/compression/batch_compression.ts";
import { decodedRecordsPerStepMax, encodeBatch, type MessageInput } from "../../src/log/batch/batch_codec.ts";
import { RecordBatchError, validateRecordBatch } from "../../src/log/batch/record_batch.ts";
import { RemoteWalk } from "../../src/log/remote/remote_walk.ts";
import { SegmentChain } from "../../src/log/segment/segment_chain.ts";
import { type ReadContext, readSegments } from "../../src/log/read/segment_reads.ts";
import { offsetForTimestamp } from "../../src/log/read/timestamp_lookup.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { appendOne, chainConfig, filledChain } from "../helpers/chain_fixture.ts";
import { codecs, compressedBatch, compressibleMessages, withRecords } from "../helpers/compressed_batches.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// The log's read functions over compressed batches: the records come back exactly, decoded in
// pieces with a pause between two, which a counting pause observes (no timing).
const config = { ...chainConfig, segmentSizeBytes: 256 * 1024 * 1024 };
const text = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

/** A chain holding `batches` as a Kafka produce appends them. */
async function chainOf(t: Test, batches: Uint8Array[]) {
  const disk = new NodeDisk();
  const dir = tempDir(t);
  const chain = new SegmentChain(disk, dir, new VirtualClock(), [
    await SegmentChain.createSegment(disk, dir, 0),
  ]);
  t.teardown(() => chain.close(null, () => false).catch(() => {}));
  for (const bytes of batches) {
    const input = { kind: "batches" as const, batches: [{ bytes, header: validateRecordBatch(bytes) }] };
    await chain.append({ ...input, stampAppendTime: false }, config);
    await chain.flushPending();
    chain.publishVisible();
  }
  return chain;
}

function countingContext() {
  const counted = { pauses: 0 };
  const context: ReadContext = {
    disk: new NodeDisk(),
    label: "t",
    remote: new RemoteWalk("t"),
    pause: () => (counted.pauses++, Promise.resolve()),
  };
  return { context, counted };
}

function view(messages: readonly { key: Uint8Array | null; payload: Uint8Array | null }[]) {
  return messages.map((m) => [text(m.key), text(m.payload)]);
}

function viewInput(messages: readonly MessageInput[]) {
  return messages.map((m) => [m.key, text(m.payload)]);
}

t.test("every codec: a batch of 6 MiB of records is read back exactly, at least one pause per piece", async (t) => {
  const messages = compressibleMessages(6 * 1024 * 1024);
  for (const codec of codecs) {
    const { batch, records } = compressedBatch(codec, 0, messages);
    const after = encodeBatch(0, 1_700_000_000_001, [{ key: "after", headers: {}, payload: null }]);
    const chain = await chainOf(t, [batch, after]);
    const { context, counted } = countingContext();
    const read = await readSegments(context, chain.segments, 0, 100_000, decompressedRecordsBytesMax);
    t.same(
      view(read.messages),
      [...viewInput(messages), ["after", null]],
      `${codec}: every message, in order`,
    );
    t.same(read.messages.map((m) => m.offset), read.messages.map((_, i) => i), `${codec}: offsets`);
    t.same(read.messages[5]!.headers.map((h) => [h.name, text(h.value)]), [["n", "5"]], `${codec}: headers`);
    const pieces = Math.ceil(records.length / decompressionPieceBytes);
    t.ok(counted.pauses >= pieces, `${codec}: ${counted.pauses} pauses for ${pieces} pieces of records`);
    const from = await readSegments(context, chain.segments, 1000, 3, decompressedRecordsBytesMax);
    t.same(from.messages.map((m) => m.offset), [1000, 1001, 1002], `${codec}: a read from within the batch`);
  }
});

t.test("a timestamp lookup decodes a compressed batch in pieces too", async (t) => {
  const messages = compressibleMessages(3 * 1024 * 1024).map((m, i) => ({
    ...m,
    timestampMs: 1_000_000 + i,
  }));
  const { batch } = compressedBatch("zstd", 0, messages);
  const chain = await chainOf(t, [batch]);
  const { context, counted } = countingContext();
  t.equal(await offsetForTimestamp(context, chain.segments, 1_000_500 * 1000), 500);
  t.ok(counted.pauses >= 3, `${counted.pauses} pauses`);
});

t.test("uncompressed batches that fit one step are decoded at once, with no pause", async (t) => {
  const { chain } = await filledChain(t, 0);
  for (let i = 0; i < 10; i++) await appendOne(chain, i);
  const { context, counted } = countingContext();
  const read = await readSegments(context, chain.segments, 0, 100, 1 << 20);
  t.equal(read.messages.length, 10);
  t.equal(counted.pauses, 0, "a read of small batches keeps its turns of the loop as before");
});

t.test("an uncompressed batch of many records is decoded in steps", async (t) => {
  const messages = Array.from(
    { length: 10_000 },
    (_, i) => ({ key: null, headers: {}, payload: Uint8Array.of(i) }),
  );
  const chain = await chainOf(t, [encodeBatch(0, 1_700_000_000_000, messages)]);
  const { context, counted } = countingContext();
  const read = await readSegments(context, chain.segments, 0, 100_000, 1 << 20);
  t.same(read.messages.map((m) => m.payload![0]), messages.map((m) => m.payload[0]));
  const steps = Math.ceil(messages.length / decodedRecordsPerStepMax);
  t.equal(
    counted.pauses,
    steps - 1,
    `10,000 records in ${steps} steps of at most ${decodedRecordsPerStepMax}`,
  );
});

t.test("a batch whose records decompress past 64 MiB fails the read as corrupt", async (t) => {
  const plain = encodeBatch(0, 1_700_000_000_000, [{ key: null, headers: {}, payload: new Uint8Array(1) }]);
  const bomb = withRecords(
    plain,
    1,
    new Uint8Array(gzipSync(new Uint8Array(decompressedRecordsBytesMax + 1))),
  );
  const chain = await chainOf(t, [bomb]);
  const { context } = countingContext();
  const error = await readSegments(context, chain.segments, 0, 10, 1 << 20).catch((e) => e);
  t.ok(error instanceof RecordBatchError && error.refusal === "corrupt");
  t.match(error.message, /decompress past 67108864 bytes/);
});
