import t, { type Test } from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { Partition } from "../../src/log/partition.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { crc32c, initCrc32c } from "../../src/runtime/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { TokenBucket } from "../../src/runtime/token_bucket.ts";
import { VirtualClock } from "../../src/runtime/virtual_clock.ts";
import { LocalControlLog } from "../../src/tier/control_log.ts";
import { segmentKeys } from "../../src/tier/object_keys.ts";
import { type LocalEnvelope, TierService } from "../../src/tier/tier_service.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// The tier service shell with the sim store, a real partition on disk and virtual time.
await initCrc32c();
const logConfig: LogConfig = {
  segmentSizeBytes: 50_000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 1000,
};

async function setup(t: Test, envelope: LocalEnvelope) {
  const disk = new NodeDisk();
  const data = tempDir(t);
  const clock = new VirtualClock();
  const partition = await Partition.create(disk, clock, new Rng(1), data, {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, logConfig);
  t.teardown(() => partition.close());
  const sim = new SimObjectStore(clock, new Rng(2));
  const store = new RetryingObjectStore(sim, clock, new Rng(3), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const tier = new TierService({
    clock,
    rng: new Rng(4),
    logger: silentLogger(),
    disk,
    store,
    bandwidth: new TokenBucket(clock, {
      rateBytesPerSec: "unlimited",
      waitersMax: 100,
      name: "upload bandwidth",
    }),
    config: {
      prefix: "strata",
      clusterId: "c1",
      uploadConcurrency: 2,
      uploadPieceBytes: 16 * 1024,
      uploadLoopBackoffMaxMs: 10_000,
      segmentUploadTimeoutMs: 90_000,
      retry: defaultRetryProfiles,
    },
  });
  tier.addPartition({ key: "1/1/0", partition, tiered: () => true, envelope: () => envelope });
  const control = await LocalControlLog.open(
    disk,
    `${data}/control/shard-0.log`,
    (_i, c) => tier.applyFloor(c),
  );
  t.teardown(() => control.close());
  tier.attachControlLog(control);
  const produce = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(10_000).fill(i % 256) }]);
    }
  };
  /** Ticks every 10 ms of virtual time, letting real I/O run between ticks, until `done` or the bound. */
  const runUntil = async (done: () => boolean, ticksMax = 3000) => {
    for (let i = 0; i < ticksMax && !done(); i++) {
      clock.advance(10);
      tier.onTick(clock.nowMs());
      await new Promise((r) => setTimeout(r, 1));
    }
    return done();
  };
  const lastSealedEnd = () => partition.log.segments.filter((s) => s.sealed).at(-1)!.endOffset;
  return { partition, sim, tier, clock, produce, runUntil, lastSealedEnd };
}

t.test("sealed segments upload oldest first; the floor reaches the last sealed segment; objects match the files", async (t) => {
  const { partition, sim, produce, runUntil, lastSealedEnd } = await setup(t, {
    ageMs: null,
    sizeBytes: null,
  });
  await produce(30);
  const caughtUp = await runUntil(() => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1);
  t.ok(caughtUp, `floor ${partition.superblock.tieredUpToOffset}, last sealed end ${lastSealedEnd()}`);
  for (const s of partition.log.segments.filter((x) => x.sealed)) {
    const keys = segmentKeys({
      prefix: "strata",
      clusterId: "c1",
      streamId: 1,
      topicId: 1,
      partitionId: 0,
      createdRevision: partition.superblock.createdRevision,
      purgeGeneration: 0,
    }, s.startOffset);
    const object = sim.peek(keys.log);
    t.ok(object, `object for segment ${s.startOffset}`);
    t.equal(
      object?.metadata["crc32c"],
      String(crc32c(object!.bytes)),
      "its metadata CRC32C matches its bytes",
    );
  }
  t.same(
    partition.log.segments.map((s) => s.location).filter((l) => l === "remote"),
    [],
    "no envelope set: nothing evicted",
  );
});

t.test("eviction keeps the local envelope once the floor has passed", async (t) => {
  const { partition, produce, runUntil, lastSealedEnd } = await setup(t, { ageMs: null, sizeBytes: 120_000 });
  await produce(40);
  const done = await runUntil(() => {
    const local = partition.log.segments.filter((s) => s.location !== "remote").reduce(
      (n, s) => n + s.sizeBytes,
      0,
    );
    return partition.superblock.tieredUpToOffset === lastSealedEnd() + 1 && local <= 120_000 + 50_000;
  });
  t.ok(done, "floor caught up and local bytes are within the envelope plus one segment");
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length > 0, `${remote.length} segments evicted`);
  t.ok(
    remote.every((s) => s.endOffset < partition.superblock.tieredUpToOffset),
    "no segment evicted above the floor",
  );
});

t.test("a store outage stalls the floor and eviction while producing keeps working; all catches up after", async (t) => {
  const { partition, sim, clock, produce, runUntil, lastSealedEnd } = await setup(t, {
    ageMs: null,
    sizeBytes: 100_000,
  });
  sim.faults = { outages: [{ fromMs: 0, toMs: 60_000 }] };
  await produce(30);
  await runUntil(() => clock.nowMs() >= 20_000);
  t.equal(partition.superblock.tieredUpToOffset, 0, "the floor holds during the outage");
  t.same(partition.log.segments.filter((s) => s.location === "remote"), [], "nothing is evicted");
  await produce(10);
  t.equal(partition.log.nextOffset, 40, "producers are unaffected");
  const caughtUp = await runUntil(
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    20_000,
  );
  t.ok(caughtUp, `after the outage the floor caught up (${partition.superblock.tieredUpToOffset})`);
  t.ok(clock.nowMs() >= 60_000);
});

t.test("await resolves once the floor passes the offset, and times out otherwise", async (t) => {
  const { tier, produce, runUntil, partition } = await setup(t, { ageMs: null, sizeBytes: null });
  await produce(12);
  const reached = tier.awaitFloor("1/1/0", 5, 60_000);
  const never = tier.awaitFloor("1/1/0", 1_000_000, 5_000);
  let results: boolean[] = [];
  void Promise.all([reached, never]).then((r) => (results = r));
  await runUntil(() => results.length === 2);
  t.same(results, [true, false]);
  t.ok(partition.superblock.tieredUpToOffset >= 5);
});
