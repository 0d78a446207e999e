import { existsSync, readdirSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import t, { type Test } from "tap";
import { runVirtual } from "../../helpers/run_virtual.ts";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { CacheAccessTable } from "../../../src/tier/cache/cache_access_table.ts";
import { CacheFullError, ChunkCache, FetchTimeoutError } from "../../../src/tier/cache/chunk_cache.ts";
import { Semaphore } from "../../../src/runtime/cooperation/semaphore.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { takesDirectIo } from "../../helpers/direct_io.ts";
import { sharedWriteWorker } from "../../../src/runtime/disk/worker/file_workers.ts";
import { evicted, payloadOk } from "../../helpers/evicted_partition.ts";
import { settlesWithin } from "../../helpers/wait_for.ts";

// The chunk cache, driven as a shard drives it: polls of an evicted partition through the tier
// remote reader, and the cache opened on its own where a test needs no partition. The sim store
// counts every GET.

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

t.test("chunk files are written around the page cache (direct writes where the file system takes them) and read through it", async (t) => {
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
  t.same(
    hinted.filter((h) => h.path.endsWith(".part") !== h.bypassCache),
    [],
    "every .part file opened with bypassCache, every chunk file read without it",
  );
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
  const cache = await attach();
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
  await settlesWithin(cache.idle(), "the trims' deletions");
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
  const cache = await attach();
  sim.faults = { latencyMs: { min: 10_000, max: 10_000 } };
  const getStarted = clock.scheduledFor(10_000);
  const first = partition.log.read(0, 3, 1 << 20);
  first.catch(() => {});
  await settlesWithin(getStarted, "the GET's 10 s latency to be armed");
  clock.advance(5000);
  const error = await first.catch((e) => e);
  t.ok(error instanceof FetchTimeoutError, "after 5 s the poll gives up with a transient error");
  t.equal(cache.chunkCount, 0, "the chunk is not cached yet");
  clock.advance(5000);
  await settlesWithin(cache.idle(), "the fetch that went on");
  t.equal(cache.chunkCount, 1, "the fetch went on and cached the chunk");
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
  const { cache, open, dir, whole } = await standaloneCache(t, 4000, 3500);
  for (const n of [1, 2, 3]) await cache.read(whole(n - 1));
  await cache.read(whole(0)); // k1 is used again: k2 is now the least recent
  await cache.close();
  const reopened = await open();
  t.equal(reopened.chunkCount, 3);
  await reopened.read(whole(3)); // 3000 + 1000 > 3500: one chunk must go
  await settlesWithin(reopened.idle(), "the trim's deletion");
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
  t.equal(cache.chunkCount, 0, "the poll answered before the chunk was cached");
  // Virtual time moves the hydration's GET latency along; the chunk file is written on real disk.
  await runVirtual(clock, cache.idle());
  const all = sim.records.filter((r) => r.op === "get");
  t.equal(all.length, 2, "then the chunk hydrated in the background");
  t.ok(all[1]!.bytes! > 3 * 1024 * 1024, `the whole chunk (${all[1]!.bytes} bytes)`);
  t.equal(cache.chunkCount, 1);
  const warm = await partition.log.read(100, 5, 64 * 1024);
  t.ok(warm.messages.every(payloadOk) && warm.messages.length === 5);
  t.equal(sim.count("get"), 2, "a warm poll makes no request");
});

/**
 * A cache opened on its own in a fresh directory, over one object "o" of `objectBytes` in the sim
 * store, read in 1000-byte chunks: chunk `n` is kept as `k{n + 1}`.
 */
async function standaloneCache(t: Test, objectBytes: number, budgetBytes: number) {
  const disk = new NodeDisk();
  const clock = new VirtualClock();
  const dir = tempDir(t);
  const sim = new SimObjectStore(clock, new Rng(7));
  const store = new RetryingObjectStore(sim, clock, new Rng(8), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const body = new Uint8Array(objectBytes).fill(2);
  await sim.put("o", () =>
    (async function* () {
      yield body;
    })(), { sizeBytes: objectBytes, metadata: {}, ifAbsent: false });
  const open = () =>
    ChunkCache.open({
      disk,
      store,
      clock,
      logger: silentLogger(),
      dir,
      config: { budgetBytes, objectsMax: 100, lowWatermarkPercent: 80, trimMinIntervalMs: 0 },
      fetchTimeoutMs: 5000,
      fetchDeadlineMs: 60_000,
      fetchSlots: new Semaphore({ permits: 4, waitersMax: 100, name: "fetch slot" }),
      fetchBandwidth: new TokenBucket(clock, {
        rateBytesPerSec: "unlimited",
        waitersMax: 100,
        name: "fetch bandwidth",
      }),
    });
  const cache = await open();
  const ref = (n: number) => ({
    objectKey: "o",
    cacheKey: `k${n + 1}`,
    span: { chunk: n, start: n * 1000, end: n * 1000 + 1000 },
  });
  /** A warm whole-chunk read of chunk `n`. */
  const whole = (n: number) => ({
    ...ref(n),
    cold: false,
    position: n * 1000,
    windowBytes: 1000,
    firstRangeEnd: null,
  });
  return { cache, open, dir, disk, clock, sim, ref, whole };
}

t.test("a reader that stops leaves the chunks fetched ahead of it, never read, first in line for eviction", async (t) => {
  // Budget 6000, low watermark 4800: six chunks fit; a seventh forces a trim of two, down to 4000.
  const { cache, dir, sim, ref, whole } = await standaloneCache(t, 7000, 6000);
  await cache.read(whole(0));
  await cache.read(whole(1));
  // Readahead after chunk 1; the reader then stops and reads neither.
  cache.prefetch(ref(2));
  cache.prefetch(ref(3));
  await settlesWithin(cache.idle(), "the fetches ahead");
  t.equal(sim.count("get"), 4, "both chunks ahead were fetched");
  // Other readers go on, read later than the chunks ahead were fetched.
  await cache.read(whole(4));
  await cache.read(whole(5));
  t.equal(cache.chunkCount, 6);
  await cache.read(whole(6)); // 6000 + 1000 > 6000: a forced trim to the watermark
  await settlesWithin(cache.idle(), "the trim's deletions");
  t.same(
    ["k1", "k2", "k3", "k4", "k5", "k6", "k7"].filter((key) => existsSync(`${dir}/${key}`)),
    ["k1", "k2", "k5", "k6", "k7"],
    "the two chunks fetched ahead and never read went; the chunks read, even earlier, stay",
  );
});

t.test("the tick saves the access table every 60 s while the cache runs, not only at close", async (t) => {
  const { cache, dir, disk, clock, whole } = await standaloneCache(t, 3000, 10_000);
  const table = new CacheAccessTable(disk, dir);
  const saved = () => table.read(silentLogger());
  await cache.read(whole(0));
  await cache.read(whole(1));
  /** Ticks once a second, as the shard's pump does, up to `untilMs`. */
  const tickUntil = async (untilMs: number) => {
    while (clock.nowMs() < untilMs) {
      clock.advance(1000);
      cache.onTick(clock.nowMs());
    }
    await settlesWithin(cache.idle(), "a save the tick started");
  };
  await tickUntil(59_000);
  t.notOk(existsSync(`${dir}/access-table.bin`), "no table is written before 60 s");
  await tickUntil(60_000);
  t.same(await saved(), ["k1", "k2"], "at 60 s the table is on disk, without a close");
  await cache.read(whole(2));
  await tickUntil(119_000);
  t.same(await saved(), ["k1", "k2"], "a chunk read since is not saved before the next 60 s");
  await tickUntil(120_000);
  t.same(await saved(), ["k1", "k2", "k3"], "at 120 s the table is saved again, with it");
});
