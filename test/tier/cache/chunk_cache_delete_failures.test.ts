import t from "tap";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { Logger } from "../../../src/runtime/logger.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { Semaphore } from "../../../src/runtime/cooperation/semaphore.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { SimDisk } from "../../../src/sim/sim_disk.ts";
import { ChunkCache } from "../../../src/tier/cache/chunk_cache.ts";

await initCrc32c();

// A chunk file the cache fails to delete is a warning in the log, never a silent leftover.

/** A simulated disk on which every unlink fails with an I/O error. */
class UnlinkFailingDisk extends SimDisk {
  override unlink(path: string): Promise<void> {
    return Promise.reject(new DiskError("io", "unlink", path));
  }
}

async function openCache(disk: SimDisk, budgetBytes: number) {
  const clock = new VirtualClock();
  const lines: string[] = [];
  const cache = await ChunkCache.open({
    disk,
    store: new RetryingObjectStore(
      new SimObjectStore(clock, new Rng(2)),
      clock,
      new Rng(3),
      defaultRetryProfiles,
      {
        putMs: 1000,
        getMs: 1000,
        otherMs: 1000,
      },
      null,
    ),
    clock,
    logger: new Logger({ level: "warn", sink: (line) => lines.push(line) }),
    dir: "/cache",
    config: { budgetBytes, objectsMax: 100, lowWatermarkPercent: 80, trimMinIntervalMs: 0 },
    fetchTimeoutMs: 1000,
    fetchDeadlineMs: 1000,
    fetchSlots: new Semaphore({ permits: 1, waitersMax: 1, name: "fetch slot" }),
    fetchBandwidth: new TokenBucket(clock, {
      rateBytesPerSec: "unlimited",
      waitersMax: 1,
      name: "fetch bandwidth",
    }),
  });
  return { cache, lines };
}

async function writeChunk(disk: SimDisk, key: string, sizeBytes: number): Promise<void> {
  await disk.mkdirp("/cache");
  const file = await disk.open(`/cache/${key}`, { create: true });
  await file.writeAt(new Uint8Array(sizeBytes), 0);
  await file.close();
}

t.test("a chunk dropped for its checksum whose file cannot be deleted is logged", async (t) => {
  const disk = new UnlinkFailingDisk(new Rng(1));
  await writeChunk(disk, "chunk-a", 100);
  const { cache, lines } = await openCache(disk, 10_000);
  await cache.drop("chunk-a");
  t.equal(lines.length, 1);
  t.match(lines[0], /could not delete a chunk that failed its checksum/);
  t.match(lines[0], /chunk-a/);
});

t.test("a chunk over a smaller budget at open whose file cannot be deleted is logged", async (t) => {
  const disk = new UnlinkFailingDisk(new Rng(1));
  await writeChunk(disk, "chunk-a", 100);
  await writeChunk(disk, "chunk-b", 100);
  const { lines } = await openCache(disk, 150);
  t.equal(lines.length, 1, "one chunk over the budget, one warning");
  t.match(lines[0], /could not delete a chunk over the budget/);
});
