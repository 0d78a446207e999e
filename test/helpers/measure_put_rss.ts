import { memoryUsage } from "node:process";
import type { ObjectStore } from "../../src/objectstore/object_store.ts";

/**
 * Puts an object of `sizeBytes` (a 1 MiB piece sent again and again, so the body allocates
 * nothing) and returns how far RSS rose above its level before the put, sampled every 10 ms.
 */
export async function measurePutRssGrowth(
  store: ObjectStore,
  key: string,
  sizeBytes: number,
): Promise<number> {
  const piece = new Uint8Array(1024 * 1024).fill(0x5a);
  const body = () =>
    (async function* () {
      for (let sent = 0; sent < sizeBytes; sent += piece.length) {
        yield piece.subarray(
          0,
          Math.min(piece.length, sizeBytes - sent),
        );
      }
    })();
  const baseline = memoryUsage.rss();
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, memoryUsage.rss())), 10);
  try {
    await store.put(key, body, { sizeBytes, metadata: {}, ifAbsent: false });
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, memoryUsage.rss());
  return peak - baseline;
}

export const mib = 1024 * 1024;

/**
 * Steady-state growth of a 256 MiB and a 1 GiB PUT (the least of `largeRuns`). One warm-up PUT first: the first large
 * transfer grows the heap and the socket buffers once (measured: 39 MiB on the first 1 GiB PUT to
 * s3rver, then 0.8 MiB on a following 2 GiB one), which is start-up cost, not growth with size.
 * Each object is deleted before the next PUT, one key at a time.
 */
export async function measureSteadyState(
  store: ObjectStore,
  prefix: string,
  largeRuns = 2,
): Promise<{ small: number; large: number }> {
  await measurePutRssGrowth(store, `${prefix}/warmup`, 256 * mib);
  await store.delete([`${prefix}/warmup`]);
  const small = await measurePutRssGrowth(store, `${prefix}/small`, 256 * mib);
  await store.delete([`${prefix}/small`]);
  // The smaller of two 1 GiB PUTs: a one-off rise from elsewhere in the process (a collection,
  // another test's server on the same machine) moved one run by 19 MiB in CI, while a whole-object
  // buffer would grow both by a gigabyte. A store that keeps objects in memory takes one run: its
  // second could reuse the first one's freed pages and hide a second copy.
  let large = Infinity;
  for (let run = 1; run <= largeRuns; run++) {
    large = Math.min(large, await measurePutRssGrowth(store, `${prefix}/large-${run}`, 1024 * mib));
    await store.delete([`${prefix}/large-${run}`]);
  }
  return { small, large };
}
