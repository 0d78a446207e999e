import { existsSync, unlinkSync } from "node:fs";
import t from "tap";
import { remoteWindowFirstBytes } from "../../../src/log/remote/remote_walk.ts";
import {
  RemoteCorruptError,
  RemoteDataLossError,
  RemoteSegmentRetiredError,
} from "../../../src/log/remote/remote_reader.ts";
import { readSuperblock, writeSuperblock } from "../../../src/log/partition/superblock.ts";
import { NotFoundError } from "../../../src/objectstore/object_store_errors.ts";
import { segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { pooledWindowBytes, TierRemoteReader } from "../../../src/tier/cache/tier_remote_reader.ts";
import { RecordingGate } from "../../helpers/recording_gate.ts";
import { BufferPool } from "../../../src/runtime/memory/buffers.ts";
import { evicted, payloadOk } from "../../helpers/evicted_partition.ts";
import { settlesWithin } from "../../helpers/wait_for.ts";

// The tier remote reader: reads of evicted segments through the log's remote walk, the reader and
// the chunk cache beneath it (whose own behaviour is tested in chunk_cache.test.ts): windows,
// readahead, checksums failing closed, missing .index files and objects.

t.test("a read spanning remote then local segments returns every message, byte for byte", async (t) => {
  const { partition, attach, floor } = await evicted(t);
  await attach();
  t.ok(partition.log.segments.filter((s) => s.location === "remote").length >= 4);
  const r = await partition.log.read(0, 1000, 1 << 24);
  t.same(r.messages.map((m) => m.offset), Array.from({ length: 90 }, (_, i) => i));
  t.ok(r.messages.every(payloadOk), "payloads intact");
  t.ok(floor < 90, "the read crossed into the local segments");
});

t.test("with the shard's piece gate, chunk fills and remote walks take turns, one per loop iteration", async (t) => {
  const { partition, attach } = await evicted(t);
  const gate = new RecordingGate();
  t.teardown(() => gate.stop());
  await attach(partition, gate);
  const reads = await Promise.all(
    Array.from({ length: 8 }, (_, i) => partition.log.read(i * 5, 30, 1 << 20)),
  );
  gate.stop();
  t.ok(reads.every((r) => r.messages.length === 30 && r.messages.every(payloadOk)), "every read intact");
  // Eight readers each walk at least one window; the fills write their chunks piece by piece.
  t.ok(gate.turnsAt.length >= 8, `the walks and fills took ${gate.turnsAt.length} turns`);
  t.equal(new Set(gate.turnsAt).size, gate.turnsAt.length, "never two pieces in one loop iteration");
});

/** The size of the record batch at `at`: its `batchLength` (big-endian, at byte 8) and the 12 bytes before it. */
const batchSizeAt = (view: DataView, at: number) => view.getInt32(at + 8) + 12;

t.test("a batch whose base offset changed (the CRC32C does not cover it) is corruption, never served", async (t) => {
  const { partition, sim, attach, incarnation } = await evicted(t);
  await attach();
  const key = segmentKeys(incarnation, 0, null).log;
  const bytes = sim.peek(key)!.bytes;
  const secondBatchAt = batchSizeAt(new DataView(bytes.buffer, bytes.byteOffset), 0);
  // The low bit of the second batch's base offset (big-endian: its last byte): it claims other
  // offsets, its CRC32C still good.
  sim.corrupt(key, secondBatchAt + 7);
  const error = await partition.log.read(0, 1000, 1 << 24).catch((e) => e);
  t.ok(error instanceof RemoteCorruptError, `the read fails closed (${error?.name})`);
});

t.test("a chunk that fails its check part-way is read again from the bad batch: no message twice", async (t) => {
  const { partition, attach, readerOptions } = await evicted(t);
  const cache = await attach();
  // A reader whose first answer carries one flipped byte in its third batch (damage in transit), and
  // whose later answers are good: the retry must not hand the first two batches over again.
  const inner = new TierRemoteReader(partition, cache, readerOptions(cache));
  let damaged = false;
  partition.log.attachRemoteReader({
    chunkAt: async (segment, position, wantBytes) => {
      const chunk = await inner.chunkAt(segment, position, wantBytes);
      if (damaged || position !== 0) return chunk;
      damaged = true;
      const bytes = chunk.bytes.slice();
      const view = new DataView(bytes.buffer);
      const second = batchSizeAt(view, 0);
      const third = second + batchSizeAt(view, second);
      bytes[third + 100]! ^= 0x01;
      return { ...chunk, bytes };
    },
    index: (segment) => inner.index(segment),
    drop: (chunk) => inner.drop(chunk),
  });
  const r = await partition.log.read(0, 10, 1 << 24);
  t.ok(damaged, "the damaged answer was served once");
  t.same(
    r.messages.map((m) => m.offset),
    Array.from({ length: 10 }, (_, i) => i),
    "each message once, in order",
  );
  t.ok(r.messages.every(payloadOk));
});

t.test("a poll asks for a modest first window whatever its byte budget, and doubles it while it needs more", async (t) => {
  const { partition, attach, readerOptions } = await evicted(t, { payloadBytes: 1000, messages: 600 });
  const cache = await attach();
  const inner = new TierRemoteReader(partition, cache, readerOptions(cache));
  const asked: number[] = [];
  partition.log.attachRemoteReader({
    chunkAt: (segment, position, wantBytes) => {
      asked.push(wantBytes);
      return inner.chunkAt(segment, position, wantBytes);
    },
    index: (segment) => inner.index(segment),
    drop: (chunk) => inner.drop(chunk),
  });
  // Ten small messages with the default 1 MiB budget: one window of 64 KiB, not of a megabyte.
  const small = await partition.log.read(0, 10, 1 << 20);
  t.same(small.messages.map((m) => m.offset), Array.from({ length: 10 }, (_, i) => i), "ten messages");
  t.same(asked, [remoteWindowFirstBytes], "one modest window");
  // A poll of 150 KB in one segment: windows of 64 KiB, then 128 KiB, each capped by what is left.
  asked.length = 0;
  const large = await partition.log.read(0, 150, 1 << 20);
  t.equal(large.messages.length, 150, "150 messages");
  t.ok(
    large.messages.every((m) =>
      m.payload!.length === 1000 && m.payload!.every((b) => b === (m.offset & 0xff))
    ),
    "intact",
  );
  t.equal(asked[0], remoteWindowFirstBytes, "the first window is modest");
  t.ok(asked.length >= 2 && asked[1]! >= 2 * remoteWindowFirstBytes, `then it doubles (${asked.join(", ")})`);
});

t.test("a released read gives its windows back for the next poll; an unreleased one keeps them", async (t) => {
  const windowPool = new BufferPool({ bufferBytes: pooledWindowBytes, buffersMax: 8 });
  const { partition, attach } = await evicted(t, { payloadBytes: 1000, messages: 600, windowPool });
  await attach();
  // The first read of a chunk hydrates it; warm reads after that are served from windows.
  await partition.log.read(0, 10, 1 << 20);
  const ok = (m: { offset: number; payload: Uint8Array | null }) =>
    m.payload!.length === 1000 && m.payload!.every((b) => b === (m.offset & 0xff));
  const first = await partition.log.read(0, 10, 1 << 20);
  t.ok(first.messages.every(ok), "the first read is intact");
  const kept = await partition.log.read(20, 10, 1 << 20);
  t.equal(windowPool.freeCount, 0, "nothing given back before a release");
  first.release();
  t.equal(windowPool.freeCount, 1, "the first read's window is back");
  first.release();
  t.equal(windowPool.freeCount, 1, "a second release changes nothing");
  const second = await partition.log.read(40, 10, 1 << 20);
  t.equal(second.messages[0]!.payload!.buffer, first.messages[0]!.payload!.buffer, "the next read reuses it");
  t.ok(second.messages.every(ok), "and is intact");
  t.ok(kept.messages.every(ok), "the read not released still reads its own bytes");
});

t.test("corrupted object bytes are detected, fetched once more, and never served", async (t) => {
  const { partition, sim, attach, incarnation } = await evicted(t);
  await attach();
  sim.corrupt(segmentKeys(incarnation, 0, null).log, 5000);
  const error = await partition.log.read(0, 1000, 1 << 24).catch((e) => e);
  t.ok(error instanceof RemoteCorruptError, `${error?.name}`);
  t.equal(sim.count("get"), 2, "dropped and fetched again once before giving up");
  const later = await partition.log.read(30, 5, 1 << 20);
  t.ok(later.messages.every(payloadOk), "other segments still read");
});

t.test("readahead: a sequential reader earns one chunk ahead, doubling up to readahead_max; with 0 there is none", async (t) => {
  const getsFor = async (readaheadChunksMax: number) => {
    const { partition, sim, attach } = await evicted(t, {
      segmentSizeBytes: 400_000,
      messages: 45,
      chunkBytes: 16 * 1024,
      readaheadChunksMax,
    });
    const cache = await attach();
    // Small polls walking forward through chunks 0 to 3 of the first segment.
    for (let offset = 0; offset < 6; offset++) {
      const r = await partition.log.read(offset, 1, 1024);
      t.ok(r.messages.length === 1 && payloadOk(r.messages[0]!)) || t.bailout();
    }
    await settlesWithin(cache.idle(), "the fetches ahead of the reader");
    return sim.count("get");
  };
  const none = await getsFor(0);
  const ahead = await getsFor(4);
  t.ok(none >= 3 && none <= 5, `without readahead: one GET per chunk read (${none})`);
  t.ok(ahead >= none + 4, `with readahead_max 4: chunks fetched ahead of the reader (${ahead} GETs)`);
});

t.test("a remote segment whose .index is missing locally has it fetched on first use and stored", async (t) => {
  const { partition, sim, attach, incarnation, disk, reopen } = await evicted(t);
  const segment = partition.log.segments.find((s) => s.location === "remote" && s.startOffset > 0)!;
  await partition.close();
  unlinkSync(segment.indexPath);
  const reopened = await reopen(disk);
  t.teardown(() => reopened.close());
  await attach(reopened);
  const target = segment.startOffset + 10;
  const r = await reopened.log.read(target, 3, 1 << 20);
  t.same(r.messages.map((m) => m.offset), [target, target + 1, target + 2]);
  t.ok(r.messages.every(payloadOk));
  t.equal(
    sim.count("get", segmentKeys(incarnation, segment.startOffset, null).index),
    1,
    "the index was fetched once",
  );
  t.ok(existsSync(segment.indexPath), "and stored");
  await reopened.log.read(target, 3, 1 << 20);
  t.equal(sim.count("get", segmentKeys(incarnation, segment.startOffset, null).index), 1, "and not again");
});

t.test("an object missing below deleted_up_to_offset retires its segment and the read clamps forward; above it, data loss", async (t) => {
  const { partition, sim, attach, incarnation, disk, reopen, metrics, readerOptions } = await evicted(t);
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length >= 3);
  await partition.close();
  const sb = (await readSuperblock(disk, partition.dir))!;
  await writeSuperblock(disk, partition.dir, { ...sb, deletedUpToOffset: remote[1]!.startOffset });
  const reopened = await reopen(disk);
  t.teardown(() => reopened.close());
  const cache = await attach(reopened);
  await sim.delete([segmentKeys(incarnation, remote[0]!.startOffset, null).log]);
  // The reader's own answer, before the log acts on it: the retirement keeps the store's not-found.
  const reader = new TierRemoteReader(reopened, cache, readerOptions(cache));
  const retired = await reader.chunkAt(reopened.log.segments[0]!, 0, 64 * 1024).catch((e) => e);
  t.ok(retired instanceof RemoteSegmentRetiredError, `${retired?.name}: ${retired?.message}`);
  t.ok(retired?.cause instanceof NotFoundError, "its cause is the store's not-found");
  const r = await reopened.log.read(0, 3, 1 << 20);
  t.equal(r.messages[0]!.offset, remote[1]!.startOffset, "the read starts past the retired segment");
  t.ok(r.messages.every(payloadOk));
  t.equal(reopened.log.stats().firstOffset, remote[1]!.startOffset, "the segment left the chain");

  await sim.delete([segmentKeys(incarnation, remote[2]!.startOffset, null).log]);
  const error = await reopened.log.read(remote[2]!.startOffset, 3, 1 << 20).catch((e) => e);
  t.ok(error instanceof RemoteDataLossError, `${error?.name}: ${error?.message}`);
  t.ok(error?.cause instanceof NotFoundError, "its cause is the store's not-found");
  t.equal(
    error?.message,
    `Cannot read partition 1/1/0 at segment ${remote[2]!.startOffset}: its object ` +
      `${segmentKeys(incarnation, remote[2]!.startOffset, null).log} is missing from the store`,
    "the message is unchanged",
  );
  t.match(await metrics.dataLoss.get(), { values: [{ value: 1 }] }, "strata_tier_data_loss_total rose");
});

t.test("a batch larger than a poll's window is read whole: the window grows until the batch fits", async (t) => {
  const { partition, attach } = await evicted(t, {
    segmentSizeBytes: 1_000_000,
    messages: 12,
    payloadBytes: 300_000,
    chunkBytes: 1024 * 1024,
  });
  await attach();
  t.ok(partition.log.segments.some((s) => s.location === "remote"), "evicted");
  for (const offset of [0, 1, 2, 5]) {
    const r = await partition.log.read(offset, 1, 1024);
    t.equal(r.messages[0]!.offset, offset);
    t.ok(
      r.messages[0]!.payload!.length === 300_000 && r.messages[0]!.payload!.every((b) => b === offset),
      `message ${offset} whole`,
    );
  }
});

t.test("readahead doubles from one chunk on each sequential chunk, 1, 2, 4, 8, then holds at readahead_max; a jump starts again at one", async (t) => {
  const { partition, attach } = await evicted(t, {
    segmentSizeBytes: 1_000_000,
    messages: 110,
    chunkBytes: 16 * 1024,
    readaheadChunksMax: 8,
  });
  const cache = await attach();
  // The reader's calls into the cache, in order: each read's chunk, then the chunks it asks ahead for.
  const calls: { read: number; ahead: number[] }[] = [];
  const read = cache.read.bind(cache);
  const prefetch = cache.prefetch.bind(cache);
  cache.read = (r) => {
    calls.push({ read: r.span.chunk, ahead: [] });
    return read(r);
  };
  cache.prefetch = (chunk) => {
    calls.at(-1)!.ahead.push(chunk.span.chunk);
    prefetch(chunk);
  };
  const first = partition.log.segments[0]!;
  t.ok(
    first.location === "remote" && first.endOffset >= 20,
    `a long evicted first segment (${first.endOffset})`,
  );
  // Small polls walking forward: each new chunk read is sequential, its next chunk cached or in flight.
  for (let offset = 0; offset <= 12; offset++) {
    const r = await partition.log.read(offset, 1, 1024);
    t.ok(r.messages.length === 1 && payloadOk(r.messages[0]!)) || t.bailout();
  }
  await settlesWithin(cache.idle(), "the fetches ahead of the reader");
  /** For each chunk read for the first time, how far ahead the reader asked. */
  const aheadByChunk = (from: number) => {
    const seen = new Map<number, number[]>();
    for (const c of calls.slice(from)) if (!seen.has(c.read)) seen.set(c.read, c.ahead);
    return [...seen.entries()];
  };
  const walked = aheadByChunk(0);
  t.ok(walked.length >= 6, `the walk read ${walked.length} chunks`);
  const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
  t.same(
    walked.slice(0, 6),
    [[0, [1]], [1, range(2, 2)], [2, range(3, 4)], [3, range(4, 8)], [4, range(5, 8)], [5, range(6, 8)]],
    "one chunk ahead, then two, four, eight, and eight",
  );
  // A jump to a chunk far ahead is not sequential: readahead starts again at one chunk.
  const jumpedFrom = calls.length;
  const r = await partition.log.read(first.endOffset - 5, 1, 1024);
  t.ok(r.messages.length === 1 && payloadOk(r.messages[0]!));
  await settlesWithin(cache.idle(), "the fetch ahead after the jump");
  const jumped = aheadByChunk(jumpedFrom);
  t.equal(jumped.length, 1, "one chunk read after the jump");
  t.ok(jumped[0]![0] > 12, `a chunk far ahead (${jumped[0]![0]})`);
  t.same(jumped[0]![1], [jumped[0]![0] + 1], "and one chunk ahead of it");
});

t.test("a sequential reader's readahead runs on past a segment's end into the next remote segments, whose chunks are then cached", async (t) => {
  // Segments of three messages, each one chunk: readahead within a segment would find nothing ahead.
  const { partition, sim, attach, incarnation } = await evicted(t, {
    segmentSizeBytes: 30_000,
    messages: 40,
    chunkBytes: 64 * 1024,
    readaheadChunksMax: 4,
  });
  const cache = await attach();
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length >= 9, `a chain of ${remote.length} small evicted segments`);
  const stemOf = (cacheKey: string) => remote.findIndex((s) => cacheKey.includes(`/${s.stem}.log_chunks/`));
  const aheadByRead: number[][] = [];
  const prefetch = cache.prefetch.bind(cache);
  cache.prefetch = (chunk) => {
    aheadByRead.at(-1)!.push(stemOf(chunk.cacheKey));
    prefetch(chunk);
  };
  for (let i = 0; i < 4; i++) {
    aheadByRead.push([]);
    const r = await partition.log.read(remote[i]!.startOffset, 1, 1024);
    t.ok(r.messages.length === 1 && payloadOk(r.messages[0]!)) || t.bailout();
    await settlesWithin(cache.idle(), "the fetches ahead of the reader");
  }
  t.same(
    aheadByRead,
    [[], [2, 3], [3, 4, 5, 6], [4, 5, 6, 7]],
    "none for the first read (not known to be sequential); then the next segments' first chunks, two, then four",
  );
  // The GETs of the segments read next: the readahead those reads start fetches the ones after them.
  const logKeys = remote.slice(4, 8).map((s) => segmentKeys(incarnation, s.startOffset, null).log);
  const getsOfRead = () => logKeys.reduce((n, key) => n + sim.count("get", key), 0);
  const gets = getsOfRead();
  for (let i = 4; i < 8; i++) {
    const r = await partition.log.read(remote[i]!.startOffset, 1, 1024);
    t.ok(r.messages.length === 1 && payloadOk(r.messages[0]!)) || t.bailout();
  }
  t.equal(getsOfRead() - gets, 0, "segments read ahead are read from the cache, with no GET");
  await settlesWithin(cache.idle(), "the fetches ahead of the reader");
});

t.test("a read from a timestamp in an evicted segment starts at the first message stamped at or after it, read through the store", async (t) => {
  const { partition, sim, attach, timestampsUs } = await evicted(t, { msBetweenMessages: 10 });
  await attach();
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length >= 3, "evicted segments");
  // A message inside the second evicted segment, neither its first nor its last.
  const segment = remote[1]!;
  const target = segment.startOffset + 5;
  t.ok(
    target < segment.endOffset,
    `offset ${target} inside segment ${segment.startOffset}-${segment.endOffset}`,
  );
  t.notOk(existsSync(segment.logPath), "its .log is no longer on local disk");
  t.equal(sim.count("get"), 0, "nothing read from the store yet");
  for (
    const [stampUs, why] of [[timestampsUs[target]!, "at its stamp"], [
      timestampsUs[target]! - 1,
      "just before it",
    ]] as const
  ) {
    const r = await partition.log.readFromTimestamp(stampUs, 30, 1 << 24);
    t.same(r.messages.map((m) => m.offset), Array.from({ length: 30 }, (_, i) => target + i), why);
    t.ok(r.messages.every(payloadOk), "payloads intact");
    t.equal(r.messages[0]!.timestampMs * 1000, timestampsUs[target], "the message stamped at that time");
  }
  t.ok(sim.count("get") > 0, "read through the remote path");
  const first = await partition.log.readFromTimestamp(timestampsUs[remote[2]!.startOffset]!, 1, 1 << 20);
  t.equal(first.messages[0]?.offset, remote[2]!.startOffset, "the first message of the next evicted segment");
});
