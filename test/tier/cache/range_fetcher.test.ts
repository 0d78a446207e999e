import t from "tap";
import { pieceBytesMax } from "../../../src/objectstore/object_store.ts";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { Semaphore } from "../../../src/runtime/cooperation/semaphore.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { RangeFetcher } from "../../../src/tier/cache/chunk_cache.ts";

// Ranged GETs for reads of remote data, against the sim store: permits, tokens, whole ranges and
// streamed chunks.

const objectBytes = 3 * pieceBytesMax + 1000;
const body = Uint8Array.from({ length: objectBytes }, (_, i) => (i * 7) & 0xff);

async function fetcher(options: { burstBytes?: number; latencyMs?: number } = {}) {
  const clock = new VirtualClock();
  const sim = new SimObjectStore(clock, new Rng(1));
  await sim.put("o", () =>
    (async function* () {
      yield body;
    })(), { sizeBytes: objectBytes, metadata: {}, ifAbsent: false });
  if (options.latencyMs !== undefined) {
    sim.faults = { latencyMs: { min: options.latencyMs, max: options.latencyMs } };
  }
  const store = new RetryingObjectStore(sim, clock, new Rng(2), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const fetchSlots = new Semaphore({ permits: 1, waitersMax: 10, name: "fetch slot" });
  const fetchBandwidth = new TokenBucket(clock, {
    rateBytesPerSec: 1000,
    burstBytes: options.burstBytes ?? 1_000_000,
    waitersMax: 0,
    name: "fetch bandwidth",
  });
  const ranges = new RangeFetcher({
    store,
    clock,
    fetchDeadlineMs: 60_000,
    fetchSlots,
    fetchBandwidth,
  });
  return { ranges, clock, sim, fetchSlots, fetchBandwidth };
}

const settle = () => new Promise((r) => setImmediate(r));

t.test("a first range comes whole, holding a permit and charged its tokens; the next fetch waits for the permit", async (t) => {
  const { ranges, clock, sim, fetchSlots, fetchBandwidth } = await fetcher({ latencyMs: 100 });
  const first = ranges.fetchRange("o", 1000, 1500, "first");
  const second = ranges.fetchRange("o", 0, 100, "index");
  await settle();
  t.equal(fetchSlots.inUse, 1, "one permit held");
  t.equal(fetchSlots.waiting, 1, "the second fetch waits for it");
  t.equal(fetchBandwidth.tokens, 1_000_000 - 500, "500 bytes charged");
  clock.advance(100);
  t.same(await first, body.subarray(1000, 1500), "the range, whole");
  await settle();
  clock.advance(100);
  t.same(await second, body.subarray(0, 100));
  t.equal(fetchSlots.inUse, 0, "the permits went back");
  t.equal(sim.count("get"), 2);
});

t.test("an admission refused its tokens gives its permit back", async (t) => {
  const { ranges, fetchSlots } = await fetcher({ burstBytes: 10 });
  const admitted = await ranges.admit(500); // a full bucket admits on credit
  admitted[Symbol.dispose]();
  await t.rejects(ranges.admit(500), /Cannot take 500 bytes/, "in debt with no room to wait: refused");
  t.equal(fetchSlots.inUse, 0, "no permit kept");
});

t.test("a chunk streams piece by piece to the writer, each at its position", async (t) => {
  const { ranges, fetchSlots } = await fetcher();
  const writes: [number, number][] = [];
  const received = new Uint8Array(objectBytes);
  using _admission = await ranges.admit(objectBytes);
  t.equal(fetchSlots.inUse, 1, "the caller holds the permit");
  const span = { chunk: 0, start: 0, end: objectBytes };
  const size = await ranges.streamChunk("o", span, (piece, position) => {
    writes.push([position, piece.length]);
    received.set(piece, position);
    return Promise.resolve();
  });
  t.equal(size, objectBytes);
  t.same(writes.map(([p]) => p), [0, pieceBytesMax, 2 * pieceBytesMax, 3 * pieceBytesMax], "four pieces");
  // Buffer.compare, not t.same: tap compares a typed array element by element (seconds for 3 MiB).
  t.equal(Buffer.compare(received, body), 0, "every byte where it belongs");
});
