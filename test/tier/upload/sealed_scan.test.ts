import t from "tap";
import type { Partition } from "../../../src/log/partition/partition.ts";
import {
  scanBackoffMinMs,
  scanDueLooksPerTickMax,
  scanIdleLookIntervalMs,
  SealedScan,
} from "../../../src/tier/upload/sealed_scan.ts";
import type { TieredPartition } from "../../../src/tier/tier_service.ts";
import type { SegmentRef } from "../../../src/tier/upload/upload_state.ts";

/** A partition with the fields the scan reads: its segments, sealed count and floor. */
function fakePartition(key: string, floor = 0) {
  const segments: {
    startOffset: number;
    endOffset: number;
    sizeBytes: number;
    maxTimestampUs: number;
    sealed: boolean;
    location: string;
  }[] = [];
  const log = { segments, sealedCount: 0, lastStableOffset: Number.MAX_SAFE_INTEGER };
  const partition = { log, superblock: { tieredUpToOffset: floor } } as unknown as Partition;
  const state = { tiered: true };
  const p: TieredPartition = {
    key,
    partition,
    tiered: () => state.tiered,
    envelope: () => ({ ageMs: null, sizeBytes: null }),
  };
  const seal = (start: number, end: number, location = "local") => {
    segments.push({
      startOffset: start,
      endOffset: end,
      sizeBytes: 100,
      maxTimestampUs: 5000 * start,
      sealed: true,
      location,
    });
    log.sealedCount++;
  };
  return { p, seal, state, log };
}

t.test("the scan offers sealed local segments at or above the floor; while it finds nothing new it backs off", (t) => {
  const a = fakePartition("a", 10);
  a.seal(0, 9);
  a.seal(10, 19);
  a.seal(20, 29, "uploaded");
  const partitions = new Map([["a", a.p]]);
  const scan = new SealedScan(() => 1000);
  scan.add("a", 0);
  const offers: string[] = [];
  let taken = true;
  const offer = (p: TieredPartition, segments: SegmentRef[]) => {
    offers.push(`${p.key}:${segments.map((s) => `${s.startOffset}@${s.sealedAtMs}`).join(",")}`);
    return taken;
  };
  scan.onTick(partitions, 0, offer);
  t.same(offers, ["a:10@50"], "below the floor and already uploaded are left out");
  taken = false;
  const looks: number[] = [];
  for (let now = 1; now <= 4000; now++) {
    const before = offers.length;
    scan.onTick(partitions, now, offer);
    if (offers.length > before) looks.push(now);
  }
  t.same(looks, [100, 300, 700, 1500, 2500, 3500], "100 ms, then doubling up to the maximum");
  t.end();
});

t.test("only segments below the last stable offset are offered; one above it is looked at again until it is passed", (t) => {
  const a = fakePartition("a");
  a.seal(0, 9);
  a.seal(10, 19);
  a.log.lastStableOffset = 15;
  const partitions = new Map([["a", a.p]]);
  const scan = new SealedScan(() => 1000);
  scan.add("a", 0);
  const offers: string[] = [];
  const offer = (_p: TieredPartition, segments: SegmentRef[]) => {
    offers.push(segments.map((s) => s.startOffset).join(","));
    return true;
  };
  scan.onTick(partitions, 0, offer);
  t.same(
    offers,
    ["0"],
    "the segment the last stable offset has not passed (the high watermark, or an open transaction) is held back",
  );
  a.log.lastStableOffset = 10;
  for (let now = 1; now <= 400; now++) scan.onTick(partitions, now, offer);
  // The offer "took" each time, so the looks stay 100 ms apart.
  t.same(offers, ["0", "0", "0", "0", "0"], "looked at again, and still held back");
  a.log.lastStableOffset = 20;
  const lookedMs = [...Array(3000).keys()].find((now) => {
    scan.onTick(partitions, 401 + now, offer);
    return offers.at(-1) === "0,10";
  });
  t.ok(
    lookedMs !== undefined && lookedMs <= 1000,
    `offered ${lookedMs} ms after the last stable offset passed it`,
  );
  t.end();
});

t.test("a seal, or tiering turned on, makes the next tick look at once", (t) => {
  const a = fakePartition("a");
  const partitions = new Map([["a", a.p]]);
  const scan = new SealedScan(() => 60_000);
  scan.add("a", 0);
  const offers: number[] = [];
  const offer = (_p: TieredPartition, segments: SegmentRef[]) => {
    offers.push(segments.length);
    return false;
  };
  scan.onTick(partitions, 0, offer);
  t.same(offers, [], "nothing sealed: nothing offered");
  scan.onTick(partitions, 1, offer);
  a.seal(0, 9);
  scan.onTick(partitions, 2, offer);
  t.same(offers, [], "a seal nobody told the scan of waits for its next look");
  // The log's activity listener touches the partition after a seal or a change of options.
  scan.touch("a");
  scan.onTick(partitions, 3, offer);
  t.same(offers, [1], "the seal was seen at once, not after the backoff");
  scan.touch("a");
  scan.onTick(partitions, 4, offer);
  t.same(offers, [1], "activity that changed neither the seal count nor tiering is not looked at");
  a.state.tiered = false;
  scan.touch("a");
  scan.onTick(partitions, 5, offer);
  t.same(offers, [1], "an untiered partition is not offered");
  a.state.tiered = true;
  scan.touch("a");
  scan.onTick(partitions, 6, offer);
  t.same(offers, [1, 1], "turning tiering on looks at once");
  scan.forget("a");
  scan.touch("a");
  scan.onTick(partitions, 7, offer);
  t.same(offers, [1, 1, 1], "a forgotten partition is new to the scan");
  t.end();
});

t.test("a floor's move makes the next tick look whatever the backoff; an idle partition is looked at once per interval", (t) => {
  const a = fakePartition("a");
  a.seal(0, 9);
  const partitions = new Map([["a", a.p]]);
  const scan = new SealedScan(() => 60_000);
  scan.add("a", 0);
  let offers = 0;
  const offer = () => (offers++, false);
  scan.onTick(partitions, 0, offer);
  scan.onTick(partitions, 50, offer);
  t.equal(offers, 1, "backing off");
  scan.due("a", 51);
  scan.onTick(partitions, 51, offer);
  t.equal(offers, 2, "the floor moved: looked at once");
  t.ok(scanBackoffMinMs > 51);
  const b = fakePartition("b");
  partitions.set("b", b.p);
  scan.add("b", 100);
  const looksAtB: number[] = [];
  for (let now = 100; now <= 100 + scanIdleLookIntervalMs; now += 10) {
    scan.onTick(partitions, now, (p) => (p.key === "b" && looksAtB.push(now), false));
    if (now === 100) b.seal(0, 9);
  }
  t.same(
    looksAtB,
    [100 + scanIdleLookIntervalMs],
    "a seal nobody told the scan of is found by the idle look",
  );
  scan.forget("a");
  scan.forget("b");
  t.end();
});

t.test("no tick takes more than its share of due looks, and every partition is reached", (t) => {
  const partitions = new Map<string, TieredPartition>();
  const scan = new SealedScan(() => 60_000);
  for (let i = 0; i < 1000; i++) {
    const a = fakePartition(`p${i}`);
    a.seal(0, 9);
    partitions.set(`p${i}`, a.p);
    scan.add(`p${i}`, 0);
  }
  const perTick: number[] = [];
  const seen = new Set<string>();
  let reachedAllAfterTicks = 0;
  for (let now = 0; now < 50 * 10; now += 10) {
    let n = 0;
    scan.onTick(partitions, now, (p) => (n++, seen.add(p.key), false));
    perTick.push(n);
    if (reachedAllAfterTicks === 0 && seen.size === 1000) reachedAllAfterTicks = perTick.length;
  }
  t.equal(Math.max(...perTick), scanDueLooksPerTickMax, "no tick looks at more than its share");
  t.equal(reachedAllAfterTicks, 16, "every partition was reached, in ceil(1000 / 64) = 16 ticks");
  t.end();
});
