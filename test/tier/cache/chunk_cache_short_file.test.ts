import { readdirSync, statSync, truncateSync } from "node:fs";
import t, { type Test } from "tap";
import { RemoteCorruptError } from "../../../src/log/remote/remote_reader.ts";
import { AroundDisk } from "../../../src/runtime/disk/around_disk.ts";
import type { Disk, DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { ChunkFileShortError } from "../../../src/tier/cache/chunk_files.ts";
import { evicted, payloadOk } from "../../helpers/evicted_partition.ts";
import { runVirtual } from "../../helpers/run_virtual.ts";
import { settlesWithin } from "../../helpers/wait_for.ts";

// Chunk files and objects shorter than their chunk: a cache file truncated on disk is corrupt (it is
// dropped, counted and fetched again, and the read is served right), while an object in the store
// shorter than its segment is a typed corrupt-data error, fetched once, not dropped and fetched again
// in a loop.

/** Every chunk file under the cache directory (the access table left out). */
function chunkFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? chunkFiles(`${dir}/${e.name}`)
      : e.name.startsWith("access-table")
      ? []
      : [`${dir}/${e.name}`]
  );
}

const corruptCount = async (
  metrics: { corruptChunkFiles: { get(): Promise<{ values: { value: number }[] }> } },
) => (await metrics.corruptChunkFiles.get()).values[0]?.value ?? 0;

/** The offsets a read of `count` messages from 0 must answer, each message intact. */
function readIsExact(
  t: Test,
  read: { messages: { offset: number; payload: Uint8Array | null }[] },
  count: number,
) {
  t.same(
    read.messages.map((m) => m.offset),
    Array.from({ length: count }, (_, i) => i),
    "every offset, in order",
  );
  t.ok(read.messages.every(payloadOk), "every payload byte for byte");
}

for (const cut of [0, 30_000, "one byte short"] as const) {
  t.test(`a chunk file truncated on disk (${cut}) is dropped, counted and fetched again: the read is exact`, async (t) => {
    const { partition, sim, attach, cacheDir, metrics } = await evicted(t);
    const cache = await attach();
    readIsExact(t, await partition.log.read(0, 6, 1 << 20), 6);
    const files = chunkFiles(cacheDir);
    t.equal(files.length, 1, "one chunk cached");
    const file = files[0]!;
    const sizeBytes = statSync(file).size;
    const key = sim.keys().find((k) => k.endsWith(`${"0".repeat(20)}.log`))!;
    const getsBefore = sim.count("get", key);
    const corruptBefore = await corruptCount(metrics);
    truncateSync(file, cut === "one byte short" ? sizeBytes - 1 : cut);

    const healed = await settlesWithin(partition.log.read(0, 6, 1 << 20), "the read of the truncated chunk");
    readIsExact(t, healed, 6);
    t.equal(
      await corruptCount(metrics),
      corruptBefore + 1,
      "strata_cache_corrupt_chunk_files_total rose by one",
    );
    t.equal(sim.count("get", key) - getsBefore, 1, "the store was asked for the chunk again, once");
    const refetch = sim.records.filter((r) => r.op === "get" && r.key === key).at(-1)!;
    t.equal(refetch.bytes, sizeBytes, "for the whole chunk");
    t.equal(statSync(file).size, sizeBytes, "the chunk file is whole again");
    t.equal(cache.chunkCount, 1, "and accounted once");
    t.equal(cache.usedBytes, sizeBytes, "at its length");

    readIsExact(t, await partition.log.read(0, 6, 1 << 20), 6);
    t.equal(sim.count("get", key) - getsBefore, 1, "the next read is warm: no GET");
    t.equal(await corruptCount(metrics), corruptBefore + 1, "and nothing more counted");
  });
}

t.test("concurrent readers of one truncated chunk file drop it once and share one fetch", async (t) => {
  const { partition, sim, attach, cacheDir, metrics } = await evicted(t);
  await attach();
  await partition.log.read(0, 3, 1 << 20);
  const gets = sim.count("get");
  for (const file of chunkFiles(cacheDir)) truncateSync(file, 1000);
  const reads = await settlesWithin(
    Promise.all(Array.from({ length: 4 }, () => partition.log.read(0, 3, 1 << 20))),
    "four reads of the truncated chunk",
  );
  for (const read of reads) readIsExact(t, read, 3);
  t.equal(await corruptCount(metrics), 1, "counted once");
  t.equal(sim.count("get") - gets, 1, "one GET for the four readers");
});

/** Replaces the sim store's object of the first segment with its first `keepBytes` bytes. */
async function shortenFirstObject(sim: Awaited<ReturnType<typeof evicted>>["sim"], keepBytes: number) {
  const key = sim.keys().find((k) => k.endsWith(`${"0".repeat(20)}.log`))!;
  const whole = sim.peek(key)!;
  const cut = whole.bytes.slice(0, keepBytes);
  sim.lose(key);
  await sim.put(key, () =>
    (async function* () {
      yield cut;
    })(), { sizeBytes: cut.length, metadata: whole.metadata, ifAbsent: false });
  return key;
}

t.test("an object shorter than its segment is a typed corrupt-data error after one GET, never a refetch loop", async (t) => {
  const { partition, sim, attach, metrics } = await evicted(t);
  const cache = await attach();
  const key = await shortenFirstObject(sim, 30_000);
  const error = await settlesWithin(partition.log.read(0, 6, 1 << 20), "the read of a short object")
    .catch((e) => e);
  t.ok(error instanceof RemoteCorruptError, `a RemoteCorruptError: ${error}`);
  t.match(String(error), /at segment 0, byte 0: its object .* is shorter than the segment/);
  t.equal(sim.count("get", key), 1, "one GET");
  t.equal(cache.chunkCount, 0, "nothing cached");
  t.equal(cache.usedBytes, 0, "and nothing reserved");
  t.equal(await corruptCount(metrics), 0, "not a corrupt cache file");
});

t.test("a cold poll's first range cut short by a short object is the same typed error", async (t) => {
  const { partition, sim, attach, clock } = await evicted(t, {
    segmentSizeBytes: 5_000_000,
    messages: 600,
    chunkBytes: 4 * 1024 * 1024,
  });
  const cache = await attach();
  const key = await shortenFirstObject(sim, 30_000);
  const error = await runVirtual(clock, partition.log.read(0, 5, 64 * 1024)).catch((e) => e);
  t.ok(error instanceof RemoteCorruptError, `a RemoteCorruptError: ${error}`);
  await runVirtual(clock, cache.idle());
  t.ok(
    sim.count("get", key) <= 2,
    `${sim.count("get", key)} GETs: the first range and its hydration at most`,
  );
  t.equal(cache.chunkCount, 0, "nothing cached");
});

/** A disk that, while armed, cuts every chunk file under `dir` to nothing just before each read of it. */
class CuttingDisk extends AroundDisk {
  armed = false;
  #dir = "";
  constructor(inner: Disk) {
    super(inner, (run) => run());
  }
  setDir(dir: string): void {
    this.#dir = dir;
  }
  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    const file = await super.open(path, options);
    if (this.#dir === "" || !path.startsWith(this.#dir) || path.includes("access-table")) return file;
    const cutBeforeRead = async (buffer: Uint8Array, position: number) => {
      if (this.armed) truncateSync(path, 0);
      return await file.readAt(buffer, position);
    };
    return new Proxy(file, {
      get: (target, property) => {
        if (property === "readAt") return cutBeforeRead;
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}

t.test("a chunk file cut short again right after its fetch fails the read typed, and is dropped", async (t) => {
  let cutting!: CuttingDisk;
  const { partition, attach, metrics, cacheDir } = await evicted(t, {
    cacheDisk: (disk) => (cutting = new CuttingDisk(disk)),
  });
  const cache = await attach();
  cutting.setDir(cacheDir);
  readIsExact(t, await partition.log.read(0, 6, 1 << 20), 6);
  const corruptBefore = await corruptCount(metrics);
  cutting.armed = true;
  const failed = await settlesWithin(
    partition.log.read(0, 6, 1 << 20).then(() => null, (e: unknown) => e),
    "the read of a file cut twice",
  );
  t.ok(failed instanceof ChunkFileShortError, `a typed refusal (${String(failed)}), not an assertion`);
  t.equal(await corruptCount(metrics), corruptBefore + 2, "both cuts counted");
  t.equal(cache.chunkCount, 0, "the file is not kept");
  cutting.armed = false;
  readIsExact(t, await partition.log.read(0, 6, 1 << 20), 6);
});
