import type { PieceGate } from "../../src/runtime/piece_gate.ts";
import { existsSync, readdirSync, readlinkSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import t, { type Test } from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition } from "../../src/log/partition.ts";
import { remoteWindowFirstBytes } from "../../src/log/remote_walk.ts";
import {
  RemoteCorruptError,
  RemoteDataLossError,
  RemoteSegmentRetiredError,
} from "../../src/log/remote_reader.ts";
import { readSuperblock, writeSuperblock } from "../../src/log/superblock.ts";
import { runVirtual } from "../helpers/run_virtual.ts";
import { NotFoundError } from "../../src/objectstore/object_store_errors.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../src/runtime/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { TokenBucket } from "../../src/runtime/token_bucket.ts";
import { VirtualClock } from "../../src/runtime/virtual_clock.ts";
import { CacheFullError, ChunkCache, FetchTimeoutError } from "../../src/tier/chunk_cache.ts";
import { Semaphore } from "../../src/runtime/semaphore.ts";
import { segmentKeys } from "../../src/tier/object_keys.ts";
import { uploadSegment } from "../../src/tier/segment_uploader.ts";
import { TierRemoteReader } from "../../src/tier/tier_remote_reader.ts";
import { CacheMetrics } from "../../src/tier/cache_metrics.ts";
import { createMetricsRegistry } from "../../src/runtime/metrics.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { takesDirectIo } from "../helpers/direct_io.ts";
import { sharedWriteWorker } from "../../src/runtime/write_worker.ts";
import { RecordingGate } from "../helpers/recording_gate.ts";
import { BufferPool } from "../../src/runtime/buffer_pool.ts";
import { pooledWindowBytes } from "../../src/tier/tier_remote_reader.ts";

// Reads of evicted segments through the chunk cache, with the sim store counting every GET.
await initCrc32c();
const baseLogConfig: LogConfig = {
  segmentSizeBytes: 200_000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
interface EvictedOptions {
  budgetBytes?: number;
  segmentSizeBytes?: number;
  messages?: number;
  chunkBytes?: number;
  readaheadChunksMax?: number;
  payloadBytes?: number;
  windowPool?: BufferPool;
}

/** A partition with sealed segments (4 by default) uploaded to the sim store and evicted. */
async function evicted(t: Test, options: EvictedOptions = {}) {
  const budgetBytes = options.budgetBytes ?? 64 * 1024 * 1024;
  const chunkBytes = options.chunkBytes ?? 64 * 1024;
  const logConfig = { ...baseLogConfig, segmentSizeBytes: options.segmentSizeBytes ?? 200_000 };
  const disk = new NodeDisk();
  const data = tempDir(t);
  const clock = new VirtualClock();
  const partition = await Partition.create(disk, clock, new Rng(1), data, {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, logConfig);
  t.teardown(() => partition.close());
  for (let i = 0; i < (options.messages ?? 90); i++) {
    await partition.log.append([{
      key: null,
      headers: {},
      payload: new Uint8Array(options.payloadBytes ?? 10_000).fill(i),
    }]);
  }
  const sim = new SimObjectStore(clock, new Rng(2));
  const store = new RetryingObjectStore(sim, clock, new Rng(3), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const sb = partition.superblock;
  const incarnation = {
    prefix: "strata",
    clusterId: "c1",
    streamId: 1,
    topicId: 1,
    partitionId: 0,
    createdRevision: sb.createdRevision,
    purgeGeneration: 0,
  };
  const sealed = partition.log.segments.filter((s) => s.sealed);
  for (const s of sealed) {
    await uploadSegment(
      {
        disk,
        store,
        pieceBytes: 65536,
        bandwidth: new TokenBucket(clock, { rateBytesPerSec: "unlimited", waitersMax: 1, name: "b" }),
      },
      {
        logPath: s.logPath,
        indexPath: s.indexPath,
        startOffset: s.startOffset,
        endOffset: s.endOffset,
        startTimestampUs: s.firstTimestampUs!,
        maxTimestampUs: s.maxTimestampUs,
      },
      segmentKeys(incarnation, s.startOffset),
      1e12,
    );
  }
  const floor = sealed.at(-1)!.endOffset + 1;
  await partition.log.evictLocal(
    floor,
    { createdRevision: sb.createdRevision, purgeGeneration: 0 },
    () => false,
  );
  const cacheDir = `${data}/cache/shard-0`;
  const openCache = (gate?: PieceGate) =>
    ChunkCache.open({
      ...(gate !== undefined ? { gate } : {}),
      ...(options.windowPool !== undefined ? { windowPool: options.windowPool } : {}),
      disk,
      store,
      clock,
      logger: silentLogger(),
      dir: cacheDir,
      config: {
        budgetBytes,
        objectsMax: 1000,
        lowWatermarkPercent: 80,
        trimMinIntervalMs: 0,
      },
      fetchTimeoutMs: 5000,
      fetchDeadlineMs: 60_000,
      fetchSlots: new Semaphore({ permits: 4, waitersMax: 100, name: "fetch slot" }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: "unlimited",
        waitersMax: 100,
        name: "fetch bandwidth",
      }),
    });
  const metrics = new CacheMetrics(createMetricsRegistry());
  const attach = async (to: Partition = partition, gate?: PieceGate) => {
    const cache = await openCache(gate);
    to.log.attachRemoteReader(
      new TierRemoteReader(to, cache, {
        prefix: "strata",
        clusterId: "c1",
        chunkBytes,
        readaheadChunksMax: options.readaheadChunksMax ?? 0,
        metrics,
      }),
      gate,
    );
    return cache;
  };
  return {
    partition,
    sim,
    store,
    attach,
    cacheDir,
    floor,
    incarnation,
    clock,
    disk,
    data,
    logConfig,
    metrics,
  };
}

const payloadOk = (m: { offset: number; payload: Uint8Array }) =>
  m.payload.length === 10_000 && m.payload.every((b) => b === (m.offset & 0xff));

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

t.test("a batch whose base offset changed (the CRC32C does not cover it) is corruption, never served", async (t) => {
  const { partition, sim, attach, incarnation } = await evicted(t);
  await attach();
  const key = segmentKeys(incarnation, 0).log;
  const bytes = sim.peek(key)!.bytes;
  const secondBatchAt = new DataView(bytes.buffer, bytes.byteOffset).getUint32(8, true);
  // Bit 1 of the second batch's base offset: it claims offsets two further on, its CRC32C still good.
  sim.corrupt(key, secondBatchAt);
  const error = await partition.log.read(0, 1000, 1 << 24).catch((e) => e);
  t.ok(error instanceof RemoteCorruptError, `the read fails closed (${error?.name})`);
});

t.test("a chunk that fails its check part-way is read again from the bad batch: no message twice", async (t) => {
  const { partition, attach } = await evicted(t);
  const cache = await attach();
  // A reader whose first answer carries one flipped byte in its third batch (damage in transit), and
  // whose later answers are good: the retry must not hand the first two batches over again.
  const inner = new TierRemoteReader(partition, cache, {
    prefix: "strata",
    clusterId: "c1",
    chunkBytes: 64 * 1024,
    readaheadChunksMax: 0,
  });
  let damaged = false;
  partition.log.attachRemoteReader({
    chunkAt: async (segment, position, wantBytes) => {
      const chunk = await inner.chunkAt(segment, position, wantBytes);
      if (damaged || position !== 0) return chunk;
      damaged = true;
      const bytes = chunk.bytes.slice();
      const view = new DataView(bytes.buffer);
      const third = view.getUint32(0 + 8, true) + view.getUint32(view.getUint32(8, true) + 8, true);
      bytes[third + 100]! ^= 0x01;
      return { ...chunk, bytes };
    },
    ensureIndex: (segment) => inner.ensureIndex(segment),
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
  const { partition, attach } = await evicted(t, { payloadBytes: 1000, messages: 600 });
  const cache = await attach();
  const inner = new TierRemoteReader(partition, cache, {
    prefix: "strata",
    clusterId: "c1",
    chunkBytes: 64 * 1024,
    readaheadChunksMax: 0,
  });
  const asked: number[] = [];
  partition.log.attachRemoteReader({
    chunkAt: (segment, position, wantBytes) => {
      asked.push(wantBytes);
      return inner.chunkAt(segment, position, wantBytes);
    },
    ensureIndex: (segment) => inner.ensureIndex(segment),
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
    large.messages.every((m) => m.payload.length === 1000 && m.payload.every((b) => b === (m.offset & 0xff))),
    "intact",
  );
  t.equal(asked[0], remoteWindowFirstBytes, "the first window is modest");
  t.ok(asked.length >= 2 && asked[1]! >= 2 * remoteWindowFirstBytes, `then it doubles (${asked.join(", ")})`);
});

t.test("a chunk fill hands each piece to the file as it arrives: it never asks for a whole chunk at once", async (t) => {
  const { partition, attach, store } = await evicted(t);
  let wholeRanges = 0;
  let streamed = 0;
  const getRange = store.getRange.bind(store);
  store.getRange = (...args) => {
    wholeRanges++;
    return getRange(...args);
  };
  const streamRange = store.streamRange.bind(store);
  store.streamRange = (key, start, end, onPiece, options) => {
    streamed++;
    return streamRange(key, start, end, onPiece, options);
  };
  await attach();
  const read = await partition.log.read(0, 30, 1 << 20);
  t.ok(read.messages.length === 30 && read.messages.every(payloadOk), "the read is intact");
  t.ok(streamed >= 1, `${streamed} chunks streamed`);
  t.equal(wholeRanges, 0, "no range fetched whole");
});

t.test("a released read gives its windows back for the next poll; an unreleased one keeps them", async (t) => {
  const windowPool = new BufferPool({ bufferBytes: pooledWindowBytes, buffersMax: 8 });
  const { partition, attach } = await evicted(t, { payloadBytes: 1000, messages: 600, windowPool });
  await attach();
  // The first read of a chunk hydrates it; warm reads after that are served from windows.
  await partition.log.read(0, 10, 1 << 20);
  const ok = (m: { offset: number; payload: Uint8Array }) =>
    m.payload.length === 1000 && m.payload.every((b) => b === (m.offset & 0xff));
  const first = await partition.log.read(0, 10, 1 << 20);
  t.ok(first.messages.every(ok), "the first read is intact");
  const kept = await partition.log.read(20, 10, 1 << 20);
  t.equal(windowPool.freeCount, 0, "nothing given back before a release");
  first.release();
  t.equal(windowPool.freeCount, 1, "the first read's window is back");
  first.release();
  t.equal(windowPool.freeCount, 1, "a second release changes nothing");
  const second = await partition.log.read(40, 10, 1 << 20);
  t.equal(second.messages[0]!.payload.buffer, first.messages[0]!.payload.buffer, "the next read reuses it");
  t.ok(second.messages.every(ok), "and is intact");
  t.ok(kept.messages.every(ok), "the read not released still reads its own bytes");
});

t.test("a warm poll makes zero GETs; concurrent cold readers of one chunk share one GET", async (t) => {
  const { partition, sim, attach } = await evicted(t);
  await attach();
  const cold = await Promise.all(Array.from({ length: 8 }, () => partition.log.read(0, 3, 1 << 20)));
  t.ok(cold.every((r) => r.messages.length === 3 && r.messages.every(payloadOk)));
  t.equal(sim.count("get"), 1, "eight concurrent cold readers, one GET");
  await partition.log.read(0, 3, 1 << 20);
  t.equal(sim.count("get"), 1, "the warm poll made none");
});

t.test("a restart keeps the cache (no refetch of cached chunks); .part leftovers are removed at boot", async (t) => {
  const { partition, sim, attach, cacheDir } = await evicted(t);
  await attach();
  await partition.log.read(0, 1000, 1 << 24);
  const gets = sim.count("get");
  writeFileSync(`${cacheDir}/leftover.part`, "half a chunk");
  const reopened = await attach();
  t.notOk(existsSync(`${cacheDir}/leftover.part`), "the .part leftover is gone");
  t.ok(reopened.chunkCount >= 4, `${reopened.chunkCount} chunks accounted at boot`);
  await partition.log.read(0, 1000, 1 << 24);
  t.equal(sim.count("get"), gets, "no GET after the restart for chunks already cached");
});

t.test("corrupted object bytes are detected, fetched once more, and never served", async (t) => {
  const { partition, sim, attach, incarnation } = await evicted(t);
  await attach();
  sim.corrupt(segmentKeys(incarnation, 0).log, 5000);
  const error = await partition.log.read(0, 1000, 1 << 24).catch((e) => e);
  t.ok(error instanceof RemoteCorruptError, `${error?.name}`);
  t.equal(sim.count("get"), 2, "dropped and fetched again once before giving up");
  const later = await partition.log.read(30, 5, 1 << 20);
  t.ok(later.messages.every(payloadOk), "other segments still read");
});

t.test("chunk files are written and read around the page cache: the hint on every cache file, direct writes where the file system takes them", async (t) => {
  // Chunks of 256 KiB: a fill's pieces are large enough for the write worker, which does direct writes.
  const { partition, attach, cacheDir, disk } = await evicted(t, {
    chunkBytes: 256 * 1024,
    segmentSizeBytes: 1_000_000,
    messages: 120,
  });
  const hinted: { path: string; bypassCache: boolean }[] = [];
  const open = disk.open.bind(disk);
  disk.open = (path, options) => {
    if (path.startsWith(cacheDir) && !path.includes("access-table")) {
      hinted.push({ path, bypassCache: options?.bypassCache ?? false });
    }
    return open(path, options);
  };
  await attach();
  const directBefore = sharedWriteWorker().directBytes;
  for (let i = 0; i < 2; i++) {
    t.ok((await partition.log.read(0, 30, 1 << 20)).messages.every(payloadOk), "intact, cold then warm");
  }
  t.ok(hinted.some((h) => h.path.endsWith(".part")), "a chunk fill opened its .part file");
  t.ok(hinted.some((h) => !h.path.endsWith(".part")), "a warm read opened the chunk file");
  t.same(hinted.filter((h) => !h.bypassCache), [], "every cache file opened with bypassCache");
  if (takesDirectIo(cacheDir)) {
    t.ok(
      sharedWriteWorker().directBytes > directBefore,
      "the fill's aligned pieces went around the page cache",
    );
  }
});

t.test("chunk files are held open for warm reads, and a trimmed chunk's deleted file holds no descriptor", {
  skip: existsSync("/proc/self/fd") ? false : "needs /proc/self/fd",
}, async (t) => {
  const { partition, attach, cacheDir } = await evicted(t, { budgetBytes: 260 * 1024 });
  await attach();
  const cacheDescriptors = () =>
    readdirSync("/proc/self/fd").flatMap((fd) => {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`);
        return target.startsWith(cacheDir) ? [target] : [];
      } catch {
        return []; // the descriptor closed while listed
      }
    });
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  let heldMax = 0;
  let refusals = 0;
  // Each position is read twice, so the second read goes to the cached chunk's file.
  for (let offset = 0; offset < remote.at(-1)!.endOffset;) {
    const poll = () =>
      partition.log.read(offset, 5, 1 << 20).catch((e) => {
        if (!(e instanceof CacheFullError)) throw e;
        refusals++;
        return null;
      });
    const first = await poll();
    const second = await poll();
    heldMax = Math.max(heldMax, cacheDescriptors().filter((d) => !d.endsWith(".part")).length);
    const r = second ?? first;
    if (r !== null) offset = r.nextOffset;
    if (refusals > 100) throw new Error("the reads made no progress");
  }
  t.ok(heldMax >= 1, `warm reads keep chunk files open (${heldMax} at most)`);
  await new Promise((r) => setTimeout(r, 50));
  const deleted = cacheDescriptors().filter((d) => d.endsWith("(deleted)"));
  t.same(deleted, [], "no descriptor left on a trimmed chunk's file");
});

t.test("a cached chunk file damaged on disk is dropped, fetched again and read from the new file, not a held handle", async (t) => {
  const { partition, sim, attach, cacheDir } = await evicted(t);
  await attach();
  // The first read hydrates the chunk; the second reads it from the cache file, which stays open.
  await partition.log.read(0, 3, 1 << 20);
  t.ok((await partition.log.read(0, 3, 1 << 20)).messages.every(payloadOk), "read warm");
  const getsBefore = sim.count("get");
  const chunkFiles = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? chunkFiles(`${dir}/${e.name}`)
        : e.name.startsWith("access-table")
        ? []
        : [`${dir}/${e.name}`]
    );
  const files = chunkFiles(cacheDir);
  t.ok(files.length >= 1, `${files.length} chunk files`);
  // Rewritten in place: the same inode, so a handle kept open sees the damage too.
  for (const file of files) writeFileSync(file, new Uint8Array(statSync(file).size).fill(0xee));
  const healed = await partition.log.read(0, 3, 1 << 20);
  t.ok(healed.messages.length === 3 && healed.messages.every(payloadOk), "served intact after one refetch");
  t.equal(sim.count("get") - getsBefore, 1, "one GET for the dropped chunk");
});

t.test("a poll waits at most fetch_timeout, answers transient, and its retry is warm: the fetch went on", async (t) => {
  const { partition, sim, attach, clock } = await evicted(t);
  await attach();
  sim.faults = { latencyMs: { min: 10_000, max: 10_000 } };
  const first = partition.log.read(0, 3, 1 << 20);
  first.catch(() => {});
  await new Promise((r) => setTimeout(r, 50));
  clock.advance(5000);
  const error = await first.catch((e) => e);
  t.ok(error instanceof FetchTimeoutError, "after 5 s the poll gives up with a transient error");
  clock.advance(5000);
  for (let i = 0; i < 200 && sim.count("get") === 0; i++) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 100));
  sim.faults = {};
  const retry = await partition.log.read(0, 3, 1 << 20);
  t.ok(retry.messages.length === 3 && retry.messages.every(payloadOk), "the retry is served");
  t.equal(sim.count("get"), 1, "from the cache the first fetch filled: one GET in all");
});

t.test("a backfill far behind the head enters the cache at the cold end and cannot evict the head's chunk", async (t) => {
  const { partition, sim, attach } = await evicted(t, { budgetBytes: 260 * 1024 });
  const cache = await attach();
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  const nearHead = remote.at(-1)!;
  await partition.log.read(nearHead.endOffset, 1, 1 << 20);
  const afterHead = sim.count("get");
  // The backfill polls as a client does: small polls, retrying a transient "cache full" answer
  // (whose forced trim frees room for the retry).
  let refusals = 0;
  for (let offset = 0; offset < nearHead.startOffset;) {
    const r = await partition.log.read(offset, 5, 1 << 20).catch((e) => {
      if (!(e instanceof CacheFullError)) throw e;
      refusals++;
      return null;
    });
    if (r !== null) {
      t.ok(r.messages.every(payloadOk), "backfilled messages intact") || t.bailout();
      offset = r.nextOffset;
    }
    if (refusals > 100) throw new Error("the backfill made no progress");
  }
  t.ok(
    cache.usedBytes <= 260 * 1024,
    `the backfill stayed within the budget (${cache.usedBytes} bytes, ${refusals} transient refusals)`,
  );
  t.ok(sim.count("get") - afterHead > 4, `the backfill fetched ${sim.count("get") - afterHead} chunks`);
  const beforeHeadAgain = sim.count("get");
  await partition.log.read(nearHead.endOffset, 1, 1 << 20);
  t.equal(
    sim.count("get"),
    beforeHeadAgain,
    "the head's chunk is still cached after the backfill: no GET for it",
  );
});

t.test("the access table is saved and restored: after a restart the least recently used chunk is still evicted first", async (t) => {
  const disk = new NodeDisk();
  const clock = new VirtualClock();
  const dir = tempDir(t);
  const sim = new SimObjectStore(clock, new Rng(5));
  const store = new RetryingObjectStore(sim, clock, new Rng(6), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const body = new Uint8Array(4000).fill(1);
  await sim.put("o", () =>
    (async function* () {
      yield body;
    })(), { sizeBytes: 4000, metadata: {}, ifAbsent: false });
  const open = () =>
    ChunkCache.open({
      disk,
      store,
      clock,
      logger: silentLogger(),
      dir,
      config: { budgetBytes: 3500, objectsMax: 100, lowWatermarkPercent: 80, trimMinIntervalMs: 0 },
      fetchTimeoutMs: 5000,
      fetchDeadlineMs: 60_000,
      fetchSlots: new Semaphore({ permits: 4, waitersMax: 100, name: "fetch slot" }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: "unlimited",
        waitersMax: 100,
        name: "fetch bandwidth",
      }),
    });
  /** A whole-chunk read of chunk `n` (1000 bytes of "o"), kept as `k{n + 1}`. */
  const whole = (n: number) => ({
    objectKey: "o",
    cacheKey: `k${n + 1}`,
    span: { chunk: n, start: n * 1000, end: n * 1000 + 1000 },
    cold: false,
    position: n * 1000,
    windowBytes: 1000,
    firstRangeEnd: null,
  });
  const cache = await open();
  for (const n of [1, 2, 3]) await cache.read(whole(n - 1));
  await cache.read(whole(0)); // k1 is used again: k2 is now the least recent
  await cache.close();
  const reopened = await open();
  t.equal(reopened.chunkCount, 3);
  await reopened.read(whole(3)); // 3000 + 1000 > 3500: one chunk must go
  await new Promise((r) => setTimeout(r, 50));
  t.notOk(existsSync(`${dir}/k2`), "k2, the least recently used before the restart, was evicted");
  t.ok(existsSync(`${dir}/k1`) && existsSync(`${dir}/k3`), "k1 and k3 stay");
});

t.test("a cold poll fetches only its own range first (64 KiB to 1 MiB) and answers from it; the chunk hydrates in the background", async (t) => {
  const { partition, sim, attach, clock } = await evicted(t, {
    segmentSizeBytes: 5_000_000,
    messages: 600,
    chunkBytes: 4 * 1024 * 1024,
  });
  const cache = await attach();
  sim.faults = { latencyMs: { min: 100, max: 100 } };
  const cold = await runVirtual(clock, partition.log.read(0, 5, 64 * 1024));
  t.same(cold.messages.map((m) => m.offset), [0, 1, 2, 3, 4]);
  t.ok(cold.messages.every(payloadOk));
  const gets = sim.records.filter((r) => r.op === "get");
  t.equal(gets.length, 1, "the poll waited for one GET");
  t.ok(
    gets[0]!.bytes! >= 64 * 1024 && gets[0]!.bytes! <= 1024 * 1024,
    `a small one: ${gets[0]!.bytes} bytes`,
  );
  // Virtual time moves the GET's latency along; real time lets the chunk file be written.
  for (let i = 0; i < 500 && cache.chunkCount === 0; i++) {
    clock.advance(50);
    await new Promise((r) => setTimeout(r, 5));
  }
  const all = sim.records.filter((r) => r.op === "get");
  t.equal(all.length, 2, "then the chunk hydrated in the background");
  t.ok(all[1]!.bytes! > 3 * 1024 * 1024, `the whole chunk (${all[1]!.bytes} bytes)`);
  t.equal(cache.chunkCount, 1);
  const warm = await partition.log.read(100, 5, 64 * 1024);
  t.ok(warm.messages.every(payloadOk) && warm.messages.length === 5);
  t.equal(sim.count("get"), 2, "a warm poll makes no request");
});

t.test("readahead: a sequential reader earns one chunk ahead, doubling up to readahead_max; with 0 there is none", async (t) => {
  const getsFor = async (readaheadChunksMax: number) => {
    const { partition, sim, attach } = await evicted(t, {
      segmentSizeBytes: 400_000,
      messages: 45,
      chunkBytes: 16 * 1024,
      readaheadChunksMax,
    });
    await attach();
    // Small polls walking forward through chunks 0 to 3 of the first segment.
    for (let offset = 0; offset < 6; offset++) {
      const r = await partition.log.read(offset, 1, 1024);
      t.ok(r.messages.length === 1 && payloadOk(r.messages[0]!)) || t.bailout();
    }
    await new Promise((r) => setTimeout(r, 100));
    return sim.count("get");
  };
  const none = await getsFor(0);
  const ahead = await getsFor(4);
  t.ok(none >= 3 && none <= 5, `without readahead: one GET per chunk read (${none})`);
  t.ok(ahead >= none + 4, `with readahead_max 4: chunks fetched ahead of the reader (${ahead} GETs)`);
});

t.test("a remote segment whose .index is missing locally has it fetched on first use and stored", async (t) => {
  const { partition, sim, attach, incarnation, disk, data, logConfig } = await evicted(t);
  const segment = partition.log.segments.find((s) => s.location === "remote" && s.startOffset > 0)!;
  await partition.close();
  unlinkSync(segment.indexPath);
  const reopened = await Partition.open(
    disk,
    new VirtualClock(),
    data,
    partition.address,
    logConfig,
    silentLogger(),
  );
  t.teardown(() => reopened.close());
  await attach(reopened);
  const target = segment.startOffset + 10;
  const r = await reopened.log.read(target, 3, 1 << 20);
  t.same(r.messages.map((m) => m.offset), [target, target + 1, target + 2]);
  t.ok(r.messages.every(payloadOk));
  t.equal(
    sim.count("get", segmentKeys(incarnation, segment.startOffset).index),
    1,
    "the index was fetched once",
  );
  t.ok(existsSync(segment.indexPath), "and stored");
  await reopened.log.read(target, 3, 1 << 20);
  t.equal(sim.count("get", segmentKeys(incarnation, segment.startOffset).index), 1, "and not again");
});

t.test("an object missing below deleted_up_to_offset retires its segment and the read clamps forward; above it, data loss", async (t) => {
  const { partition, sim, attach, incarnation, disk, data, logConfig, metrics } = await evicted(t);
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length >= 3);
  await partition.close();
  const sb = (await readSuperblock(disk, partition.dir))!;
  await writeSuperblock(disk, partition.dir, { ...sb, deletedUpToOffset: remote[1]!.startOffset });
  const reopened = await Partition.open(
    disk,
    new VirtualClock(),
    data,
    partition.address,
    logConfig,
    silentLogger(),
  );
  t.teardown(() => reopened.close());
  const cache = await attach(reopened);
  await sim.delete([segmentKeys(incarnation, remote[0]!.startOffset).log]);
  // The reader's own answer, before the log acts on it: the retirement keeps the store's not-found.
  const reader = new TierRemoteReader(reopened, cache, {
    prefix: "strata",
    clusterId: "c1",
    chunkBytes: 64 * 1024,
    readaheadChunksMax: 0,
  });
  const retired = await reader.chunkAt(reopened.log.segments[0]!, 0, 64 * 1024).catch((e) => e);
  t.ok(retired instanceof RemoteSegmentRetiredError, `${retired?.name}: ${retired?.message}`);
  t.ok(retired?.cause instanceof NotFoundError, "its cause is the store's not-found");
  const r = await reopened.log.read(0, 3, 1 << 20);
  t.equal(r.messages[0]!.offset, remote[1]!.startOffset, "the read starts past the retired segment");
  t.ok(r.messages.every(payloadOk));
  t.equal(reopened.log.stats().firstOffset, remote[1]!.startOffset, "the segment left the chain");

  await sim.delete([segmentKeys(incarnation, remote[2]!.startOffset).log]);
  const error = await reopened.log.read(remote[2]!.startOffset, 3, 1 << 20).catch((e) => e);
  t.ok(error instanceof RemoteDataLossError, `${error?.name}: ${error?.message}`);
  t.ok(error?.cause instanceof NotFoundError, "its cause is the store's not-found");
  t.equal(
    error?.message,
    `Cannot read partition 1/1/0 at segment ${remote[2]!.startOffset}: its object ` +
      `${segmentKeys(incarnation, remote[2]!.startOffset).log} is missing from the store`,
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
      r.messages[0]!.payload.length === 300_000 && r.messages[0]!.payload.every((b) => b === offset),
      `message ${offset} whole`,
    );
  }
});
