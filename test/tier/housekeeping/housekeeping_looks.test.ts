import t from "tap";
import type { Partition } from "../../../src/log/partition/partition.ts";
import type { DeadlineObjectStore } from "../../../src/objectstore/retrying_object_store.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import {
  Housekeeping,
  type HousekeptPartition,
  type HousekeptTier,
} from "../../../src/tier/housekeeping/housekeeping.ts";
import type { UploadDeps } from "../../../src/tier/upload/segment_uploader.ts";
import { housekeepingDefaults } from "../../helpers/tier_harness.ts";

// Housekeeping looks at its shard's partitions a share per tick, not all of them in one tick.

const partitions = 1000;

function fakeTier() {
  const looks = { count: 0 };
  const list: HousekeptPartition[] = Array.from({ length: partitions }, (_, i) => {
    const superblock = {
      createdRevision: "aa",
      purgeGeneration: 0,
      tieredUpToOffset: 0,
      deletedUpToOffset: 0,
    };
    return {
      key: `1/1/${i}`,
      // As much of a partition as the looks and a manifest upload read: no sealed segment.
      partition: { superblock, log: { segments: [] } } as unknown as Partition,
      tiered: () => (looks.count++, true),
    };
  });
  const tier: HousekeptTier = {
    partitions: () => list,
    uploadDeps: {} as UploadDeps,
    submitReplace: () => Promise.reject(new Error("Cannot replace: no merge in this test")),
  };
  return { tier, list, looks };
}

t.test("a shard of 1,000 partitions is looked at 128 per tick, each once every 10 s, and a change reaches the core", (t) => {
  const clock = new VirtualClock();
  const { tier, list, looks } = fakeTier();
  const housekeeping = new Housekeeping({
    clock,
    logger: silentLogger(),
    // A floor that moves makes a manifest due: its upload lands at once.
    store: { put: () => Promise.resolve({ etag: "manifest" }) } as unknown as DeadlineObjectStore,
    config: {
      ...housekeepingDefaults,
      prefix: "strata",
      clusterId: "c1",
      segmentUploadTimeoutMs: 90_000,
    },
    sweepsOrphans: false,
    tier,
    requests: { requestsServed: 0 },
    incarnations: { incarnationTable: () => new Map() },
  });
  t.teardown(() => housekeeping.stop());
  const perTick: number[] = [];
  const tick = () => {
    const before = looks.count;
    housekeeping.onTick(clock.nowMs());
    perTick.push(looks.count - before);
    clock.advance(10);
  };
  for (let i = 0; i < 1500; i++) tick();
  t.equal(Math.max(...perTick), 128, "no tick looks at more than 128");
  t.equal(
    looks.count,
    2 * partitions,
    "two rounds in 15 s: one every 10 s (the idle timeout's, at most 10 s)",
  );
  t.equal(
    perTick.filter((n) => n > 0).length,
    2 * 8,
    "each round in ceil(1000 / 128) = 8 ticks; the others look at none",
  );
  t.equal(housekeeping.state.partitions.size, partitions, "the core knows every partition");
  (list[700]!.partition.superblock as { tieredUpToOffset: number }).tieredUpToOffset = 42;
  for (let i = 0; i < 1000; i++) tick();
  t.equal(housekeeping.state.partitions.get("1/1/700")!.floor, 42, "a floor that moved reached the core");
  t.end();
});
