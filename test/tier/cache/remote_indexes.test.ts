import { existsSync, readFileSync, writeFileSync } from "node:fs";
import t from "tap";
import { Segment } from "../../../src/log/segment/segment.ts";
import { SparseIndex } from "../../../src/log/segment/sparse_index.ts";
import { NotFoundError, TransportError } from "../../../src/objectstore/object_store_errors.ts";
import type { DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";
import { IndexCacheMetrics, RemoteIndexes } from "../../../src/tier/cache/remote_indexes.ts";
import { TierRemoteReader } from "../../../src/tier/cache/tier_remote_reader.ts";
import { segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { evicted } from "../../helpers/evicted_partition.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// Remote segments cost nothing in memory until read: their indexes are loaded on a segment's
// first read, from the local `.index` or the store, into one bounded cache per shard.

/** An index of `entries` entries, one every 1000 bytes, as bytes of a `.index` file. */
function indexBytes(entries: number): Uint8Array {
  const index = new SparseIndex();
  for (let i = 0; i < entries; i++) index.add({ relativeOffset: i * 10, position: i * 1000, timestampUs: i });
  return index.bytes().slice();
}

/** A remote segment of `sizeBytes` in `dir` whose index object has `indexSizeBytes`. */
function remoteSegment(
  dir: string,
  startOffset: number,
  indexSizeBytes: number,
  sizeBytes = 100_000,
): Segment {
  const segment = new Segment(dir, startOffset, null);
  segment.location = "remote";
  segment.sizeBytes = sizeBytes;
  segment.endOffset = startOffset + 9;
  segment.marker = {
    startOffset,
    endOffset: startOffset + 9,
    sizeBytes,
    indexSizeBytes,
    startTimestampUs: 0,
    endTimestampUs: 0,
    maxTimestampUs: 0,
    createdRevision: "00000000000000aa",
    purgeGeneration: 0,
    logCrc32: 0,
    merged: false,
  };
  return segment;
}

function indexes(
  budgetBytes: number,
  fetchIndex: (key: string, size: number) => Promise<Uint8Array>,
) {
  const registry = createMetricsRegistry();
  const metrics = new IndexCacheMetrics(registry);
  const cache = new RemoteIndexes({
    disk: new NodeDisk(),
    fetchIndex,
    budgetBytes,
    chunkBytes: 32 * 1024,
    logger: silentLogger(),
    metrics,
  });
  const metric = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;
  return { cache, metric };
}

t.test("an index is read from its local file once, then served from memory; the store is not asked", async (t) => {
  const dir = tempDir(t);
  const segment = remoteSegment(dir, 0, 16 * 50);
  writeFileSync(segment.indexPath, indexBytes(50));
  let fetches = 0;
  const { cache, metric } = indexes(1 << 20, () => (fetches++, Promise.reject(new Error("not asked"))));
  const first = await cache.get(segment, "k0", "p");
  t.equal(first.index!.length, 50);
  t.same(
    first.chunkStarts,
    [0, 33_000, 49_000],
    "chunk boundaries on the batch starts nearest 32 KiB multiples",
  );
  t.equal(await cache.get(segment, "k0", "p"), first, "the second lookup is the same entry");
  t.equal(fetches, 0);
  t.equal(await metric("strata_index_cache_misses_total"), 1);
  t.equal(await metric("strata_index_cache_hits_total"), 1);
  t.ok(cache.usedBytes >= 50 * 16, `${cache.usedBytes} bytes held`);
});

t.test("a missing local index is fetched once for concurrent reads and kept locally for the next load", async (t) => {
  const dir = tempDir(t);
  const segment = remoteSegment(dir, 0, 16 * 20);
  let fetches = 0;
  const { cache, metric } = indexes(1 << 20, () => {
    fetches++;
    return Promise.resolve(indexBytes(20));
  });
  const [a, b] = await Promise.all([cache.get(segment, "k0", "p"), cache.get(segment, "k0", "p")]);
  t.equal(a, b, "both reads share one load");
  t.equal(fetches, 1);
  t.same([...readFileSync(segment.indexPath)], [...indexBytes(20)], "stored beside the marker");
  t.equal(await metric("strata_index_cache_fetches_total"), 1);
});

t.test("a failed fetch is counted and not held: the read scans, and the next one fetches again", async (t) => {
  const dir = tempDir(t);
  const segment = remoteSegment(dir, 0, 16 * 20);
  let fails = 1;
  const { cache, metric } = indexes(
    1 << 20,
    () => fails-- > 0 ? Promise.reject(new TransportError("reset", null)) : Promise.resolve(indexBytes(20)),
  );
  const failed = await cache.get(segment, "k0", "p");
  t.equal(failed.index, null, "no index: the read scans from the segment's start");
  t.same(failed.chunkStarts, [0], "as one chunk");
  t.equal(await metric("strata_cache_index_fetch_failures_total"), 1);
  t.equal((await cache.get(segment, "k0", "p")).index!.length, 20, "fetched again, and served");
  const gone = remoteSegment(dir, 100, 16 * 20);
  const { cache: missing } = indexes(1 << 20, () => Promise.reject(new NotFoundError("gone", 404)));
  await t.rejects(missing.get(gone, "k100", "p"), NotFoundError, "a gone object is the caller's to judge");
  const foreign = remoteSegment(dir, 200, 16 * 20, 5000);
  const { cache: unfit } = indexes(1 << 20, () => Promise.resolve(indexBytes(20)));
  t.equal(
    (await unfit.get(foreign, "k200", "p")).index,
    null,
    "an index pointing past its segment is not used",
  );
  t.notOk(existsSync(foreign.indexPath), "nor kept");
});

t.test("the cache holds at most its budget, dropping the least recently used", async (t) => {
  const dir = tempDir(t);
  const segments = Array.from({ length: 10 }, (_, i) => remoteSegment(dir, i * 1000, 16 * 100));
  const { cache, metric } = indexes(5000, () => Promise.resolve(indexBytes(100)));
  for (const s of segments) {
    await cache.get(s, `k${s.startOffset}`, "p");
    t.ok(cache.usedBytes <= 5000, `${cache.usedBytes} bytes within the budget`);
  }
  t.equal(cache.count, 2, "two indexes of 1.6 kB and their overhead fit");
  t.equal(await metric("strata_index_cache_evictions_total"), 8);
  await cache.get(segments[9]!, "k9000", "p");
  t.equal(await metric("strata_index_cache_hits_total"), 1, "the most recent stayed");
});

t.test("each partition's held index bytes are its own: counted on hold, given back on eviction", async (t) => {
  const dir = tempDir(t);
  const segments = Array.from({ length: 4 }, (_, i) => remoteSegment(dir, i * 1000, 16 * 100));
  const { cache } = indexes(5000, () => Promise.resolve(indexBytes(100)));
  await cache.get(segments[0]!, "k0", "a");
  const one = cache.usedBytes;
  t.same([cache.bytesOf("a"), cache.bytesOf("b")], [one, 0], "one index, a's");
  await cache.get(segments[1]!, "k1000", "b");
  t.same([cache.bytesOf("a"), cache.bytesOf("b")], [one, one], "one each");
  // A third of the same size does not fit the budget with two: a's, the oldest, goes.
  await cache.get(segments[2]!, "k2000", "b");
  t.same([cache.bytesOf("a"), cache.bytesOf("b")], [0, 2 * one], "a's evicted, b holds two");
  t.equal(cache.bytesOf("a") + cache.bytesOf("b"), cache.usedBytes, "the owners' bytes add up to the total");
});

/** Message `i` of the fixture: 100 bytes, each `i`'s low byte. */
const payloadOk = (m: { offset: number; payload: Uint8Array | null }) =>
  m.payload!.length === 100 && m.payload!.every((b) => b === (m.offset & 0xff));

/** A disk that records which files are opened, by name. */
class OpenLogDisk extends NodeDisk {
  readonly opened: string[] = [];
  override open(path: string, options?: OpenOptions): Promise<DiskFile> {
    this.opened.push(path);
    return super.open(path, options);
  }
}

t.test("a partition of 2,000 remote segments opens from its remote table without reading an index; a read loads one, a scan stays within budget", async (t) => {
  const { partition, attach, readerOptions, reopen, sim, incarnation } = await evicted(t, {
    messages: 2002,
    payloadBytes: 100,
    segmentSizeBytes: 150,
  });
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length >= 2000, `${remote.length} remote segments`);
  await partition.close();
  const counting = new OpenLogDisk();
  const reopened = await reopen(counting);
  t.teardown(() => reopened.close());
  t.same(counting.opened.filter((p) => p.endsWith(".index")), [], "boot read no index");
  t.ok(
    counting.opened.length <= 8,
    `boot opened ${counting.opened.length} files: the table, not a file a segment`,
  );
  t.ok(
    reopened.log.segments.filter((s) => s.location === "remote").every((s) => s.index === null),
    "nor holds one",
  );
  const cache = await attach(reopened);
  const budgetBytes = 16 * 1024;
  const held = new RemoteIndexes({
    disk: counting,
    fetchIndex: (key, sizeBytes) => cache.fetchIndex(key, sizeBytes),
    budgetBytes,
    chunkBytes: 64 * 1024,
    logger: silentLogger(),
  });
  reopened.log.attachRemoteReader(
    new TierRemoteReader(reopened, cache, { ...readerOptions(cache), indexes: held }),
  );
  const middle = remote[1000]!;
  const r = await reopened.log.read(middle.startOffset, 1, 1 << 20);
  t.equal(r.messages[0]!.offset, middle.startOffset);
  t.ok(r.messages.every(payloadOk));
  t.same(counting.opened.filter((p) => p.endsWith(".index")), [middle.indexPath], "one index read, its own");
  t.equal(
    sim.count("get", segmentKeys(incarnation, middle.startOffset, null).index),
    0,
    "from the local file",
  );
  let offset = 0;
  let maxHeldBytes = 0;
  for (let reads = 0; reads < 10_000 && offset < 2002; reads++) {
    const page = await reopened.log.read(offset, 100, 1 << 20);
    t.ok(page.messages.length > 0, `the scan goes on at ${offset}`);
    if (!page.messages.every((m, i) => m.offset === offset + i && payloadOk(m))) t.fail(`page at ${offset}`);
    offset += page.messages.length;
    maxHeldBytes = Math.max(maxHeldBytes, held.usedBytes);
  }
  t.equal(offset, 2002, "every record read back, in order");
  t.ok(
    maxHeldBytes <= budgetBytes,
    `the index cache held at most ${maxHeldBytes} of its ${budgetBytes} bytes`,
  );
});
