import t from "tap";
import type { Partition } from "../../src/log/partition/partition.ts";
import {
  evictionIdleLookIntervalMs,
  EvictionLooks,
  evictionRecheckMs,
} from "../../src/tier/local_evictions.ts";
import type { TieredPartition } from "../../src/tier/tier_service.ts";

/** A partition with one sealed local segment whose newest message is at `maxTimestampMs`. */
function fakePartition(key: string, maxTimestampMs: number, ageMs: number | null) {
  const segments = [
    {
      startOffset: 0,
      endOffset: 9,
      sizeBytes: 100,
      maxTimestampUs: maxTimestampMs * 1000,
      sealed: true,
      location: "local",
    },
    { startOffset: 10, endOffset: 10, sizeBytes: 0, maxTimestampUs: 0, sealed: false, location: "local" },
  ];
  const partition = { log: { segments }, superblock: { tieredUpToOffset: 0 } } as unknown as Partition;
  const p: TieredPartition = {
    key,
    partition,
    tiered: () => true,
    envelope: () => ({ ageMs, sizeBytes: null }),
  };
  return p;
}

const wallOffsetMs = 1_000_000;

/** Ticks every 10 ms from `fromMs` to `toMs`, the wall clock `wallOffsetMs` ahead; the times each key was looked at. */
function run(
  looks: EvictionLooks,
  partitions: Map<string, TieredPartition>,
  fromMs: number,
  toMs: number,
  started = false,
) {
  const lookedAt = new Map<string, number[]>();
  for (let nowMs = fromMs; nowMs <= toMs; nowMs += 10) {
    looks.onTick(partitions, nowMs, nowMs + wallOffsetMs, (p) => {
      lookedAt.set(p.key, [...(lookedAt.get(p.key) ?? []), nowMs]);
      return started;
    });
  }
  return lookedAt;
}
t.test("a partition is looked at when its oldest local segment leaves the age envelope, not every second", (t) => {
  const looks = new EvictionLooks();
  // Its newest message at wall 1,000,000 (monotonic 0), kept 5 s: out at monotonic 5,000 and a bit.
  const aged = fakePartition("aged", wallOffsetMs, 5000);
  const unlimited = fakePartition("unlimited", wallOffsetMs, null);
  const partitions = new Map([["aged", aged], ["unlimited", unlimited]]);
  looks.add("aged", 0);
  looks.add("unlimited", 0);
  const lookedAt = run(looks, partitions, 0, 2 * evictionIdleLookIntervalMs);
  t.same(
    lookedAt.get("aged"),
    [0, 5010, 5010 + evictionIdleLookIntervalMs],
    "once on joining, when the segment aged out, then once per idle interval",
  );
  t.same(
    lookedAt.get("unlimited"),
    [0, evictionIdleLookIntervalMs, 2 * evictionIdleLookIntervalMs],
    "once per idle interval",
  );
  t.end();
});

t.test("a look that started an eviction pass is followed by one a second later; a touch looks at once", (t) => {
  const looks = new EvictionLooks();
  const p = fakePartition("p", 0, null);
  const partitions = new Map([["p", p]]);
  looks.add("p", 0);
  t.same(run(looks, partitions, 0, 2500, true).get("p"), [0, evictionRecheckMs, 2 * evictionRecheckMs]);
  looks.touch("p");
  t.same(run(looks, partitions, 2510, 2600).get("p"), [2510], "touched: the next tick");
  looks.remove("p");
  looks.touch("p");
  t.equal(
    run(looks, partitions, 2610, 100_000).get("p"),
    undefined,
    "a removed partition is never looked at",
  );
  t.end();
});
