import t, { type Test } from "tap";
import { Partition } from "../../../src/log/partition/partition.ts";
import { PartitionLog } from "../../../src/log/partition/partition_log.ts";
import { writeSeededPartition } from "../../../src/log/partition/seeded_partition.ts";
import {
  type DeadlineObjectStore,
  RetryingObjectStore,
} from "../../../src/objectstore/retrying_object_store.ts";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { Logger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { sealedSegmentOf, uploadSegment } from "../../../src/tier/upload/segment_uploader.ts";
import { BucketStateTransfer, type CommittedFloor } from "../../../src/tier/restore/state_transfer.ts";
import { StateTransferError } from "../../../src/tier/restore/transfer_chain.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { idempotentBatch } from "../../helpers/kafka/idempotent_batch.ts";

await initCrc32c();
const address = { streamId: 1, topicId: 2, partitionId: 0 };
const revision = "0123456789abcdef";
const incarnation = {
  prefix: "strata",
  clusterId: "c0ffee",
  ...address,
  createdRevision: revision,
  purgeGeneration: 0,
};
const logConfig = {
  segmentSizeBytes: 40_000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always" as const,
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const quiet = new Logger({ level: "error", sink: () => {} });

/**
 * A leader's log written under `epochs` in turn (`perEpoch` records of 10 kB each), every sealed
 * segment uploaded to a simulated bucket as the uploader writes it. Returns the log, the store
 * and the reads the transfer makes.
 */
async function leaderWithBucket(
  t: Test,
  epochs: number[],
  perEpoch: number,
  producerId: number | null = null,
) {
  const disk = new NodeDisk();
  const clock = new VirtualClock();
  const dir = tempDir(t);
  const log = new PartitionLog(
    disk,
    dir,
    clock,
    logConfig,
    [await PartitionLog.createSegment(disk, dir, 0)],
    "t",
  );
  t.teardown(() => log.close());
  let sequence = 0;
  for (const epoch of epochs) {
    log.setReplication({ leaderEpoch: epoch, following: false, highWatermark: null });
    for (let i = 0; i < perEpoch; i++) {
      await log.append([{ key: null, headers: {}, payload: new Uint8Array(10_000).fill(epoch) }]);
      if (producerId !== null) await log.appendRecordBatches(idempotentBatch(producerId, 0, sequence++, 1));
    }
  }
  const sim = new SimObjectStore(clock, new Rng(1));
  const store = new RetryingObjectStore(sim, clock, new Rng(2), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const bandwidth = new TokenBucket(clock, {
    rateBytesPerSec: 1e12,
    burstBytes: 1e12,
    waitersMax: 10,
    name: "upload bandwidth",
  });
  const sealed = log.segments.filter((s) => s.sealed);
  for (const segment of sealed) {
    const keys = segmentKeys(incarnation, segment.startOffset, null);
    await uploadSegment(
      { disk, store, pieceBytes: 64 * 1024, bandwidth },
      sealedSegmentOf(segment),
      keys,
      1e12,
    );
  }
  const reads = { heads: 0, ranges: 0 };
  const counting: DeadlineObjectStore = {
    put: (key, body, options) => store.put(key, body, options),
    getRange: (key, start, end, options) => (reads.ranges++, store.getRange(key, start, end, options)),
    streamRange: (key, start, end, sink, options) => store.streamRange(key, start, end, sink, options),
    head: (key, options) => (reads.heads++, store.head(key, options)),
    list: (prefix, options) => store.list(prefix, options),
    delete: (keys, options) => store.delete(keys, options),
  };
  return { log, sealed, sim, store: counting, reads, disk, clock };
}

function transferOf(store: DeadlineObjectStore, floor: CommittedFloor | null) {
  const seen: { segments: number; bytes: number }[] = [];
  const transfer = new BucketStateTransfer({
    store,
    prefix: "strata",
    clusterId: "c0ffee",
    committedFloor: (label) => {
      if (label !== "1/2/0") throw new Error(`asked for ${label}`);
      return Promise.resolve(floor);
    },
    logger: quiet,
    transferred: (segments, bytes) => seen.push({ segments, bytes }),
  });
  return { transfer, seen };
}

t.test("a replica seeded from the bucket has the leader's tiered chain, epochs and floor, and no byte of it", async (t) => {
  const { log, sealed, store, reads, disk, clock } = await leaderWithBucket(t, [1, 2, 2, 5, 7], 12);
  // The floor: every sealed segment but the last is committed.
  const committed = sealed.slice(0, -1);
  const floor = committed.at(-1)!.endOffset + 1;
  const { transfer, seen } = transferOf(store, {
    purgeGeneration: 0,
    upToOffset: floor,
    deletedUpToOffset: 0,
  });
  const seed = await transfer.seedFor(address, revision);
  t.ok(seed !== null, "a seed");
  t.equal(seed!.tieredUpToOffset, floor);
  t.same(
    seed!.markers.map((m) => [m.startOffset, m.endOffset, m.sizeBytes]),
    committed.map((s) => [s.startOffset, s.endOffset, s.sizeBytes]),
    "one marker per committed segment, with its bounds and size",
  );
  t.same(
    seed!.epochs,
    log.leaderEpochs.starts().filter((e) => e.startOffset < floor),
    "the leader epochs below the floor, where each began",
  );
  t.same(seen, [{ segments: committed.length, bytes: committed.reduce((n, s) => n + s.sizeBytes, 0) }]);
  t.equal(
    reads.heads,
    committed.length + 1,
    "one HEAD per segment, and one of the last one's producer snapshot",
  );
  t.ok(
    reads.ranges <= 2 * 4 * Math.ceil(Math.log2(committed.length)) + 3,
    `${reads.ranges} epoch reads of 17 bytes for ${committed.length} segments and 4 epochs, and the snapshot`,
  );

  const dataPath = tempDir(t);
  const pdir = `${dataPath}/streams/1/topics/2/partitions/0`;
  await disk.mkdirp(pdir);
  await writeSeededPartition(disk, pdir, seed!);
  const replica = await Partition.open(disk, clock, dataPath, address, logConfig, quiet);
  t.teardown(() => replica.close());
  t.equal(replica.log.firstOffset, 0, "its log starts where the leader's does");
  t.equal(replica.log.nextOffset, floor, "and it fetches from the floor");
  t.equal(replica.superblock.tieredUpToOffset, floor);
  t.same(replica.superblock.createdRevision, revision);
  t.ok(
    replica.log.segments.slice(0, -1).every((s) => s.location === "remote"),
    "every segment below the floor is tiered",
  );
  t.equal(replica.log.segments.at(-1)!.startOffset, floor, "the active segment starts at the floor");
  t.same(replica.log.leaderEpochs.starts(), seed!.epochs, "the epochs are kept");
  t.same(
    replica.log.leaderEpochs.endOffsetFor(2, floor),
    log.leaderEpochs.endOffsetFor(2, log.nextOffset),
    "and answer a follower's divergence check as the leader's do",
  );
});

t.test("a replica seeded from the bucket knows the idempotent producers of its chain, from the last segment's snapshot", async (t) => {
  const { log, sealed, store, disk, clock } = await leaderWithBucket(t, [3], 30, 9);
  const committed = sealed.slice(0, -1);
  const floor = committed.at(-1)!.endOffset + 1;
  const { transfer } = transferOf(store, { purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: 0 });
  const seed = (await transfer.seedFor(address, revision))!;
  t.equal(seed.producers?.offset, floor, "the snapshot taken at the floor");
  t.ok(log.nextOffset > floor + 4, "the leader's log goes on past the floor");
  // Each record of 10 kB is followed by producer 9's batch at sequence k, at offset 2k + 1.
  const below = Array.from({ length: 30 }, (_, k) => ({ lastSequence: k, lastOffset: 2 * k + 1 }))
    .filter((b) => b.lastOffset < floor)
    .slice(-5);
  t.same(
    seed.producers!.entries.map((e) => e.batches.map((b) => [b.lastSequence, b.lastOffset])),
    [below.map((b) => [b.lastSequence, b.lastOffset])],
    "producer 9's last five batches below the floor",
  );
  const dataPath = tempDir(t);
  const pdir = `${dataPath}/streams/1/topics/2/partitions/0`;
  await writeSeededPartition(disk, pdir, seed);
  const replica = await Partition.open(disk, clock, dataPath, address, logConfig, quiet);
  t.teardown(() => replica.close());
  const last = below.at(-1)!;
  t.same(
    await replica.log.appendRecordBatches(idempotentBatch(9, 0, last.lastSequence, 1)),
    { baseOffset: last.lastOffset, count: 1 },
    "a retry of the last batch below the floor is a duplicate on the replica",
  );
  t.equal(replica.log.nextOffset, floor, "nothing appended");

  await store.delete([segmentKeys(incarnation, committed.at(-1)!.startOffset, null).producers]);
  const without = (await transfer.seedFor(address, revision))!;
  t.equal(without.producers, null, "a last segment without a snapshot seeds no producers");
});

t.test("the chain is taken back from the floor to the first gap; objects above the floor are left out", async (t) => {
  const { sealed, sim, store } = await leaderWithBucket(t, [3], 40);
  t.ok(sealed.length >= 6, `${sealed.length} sealed segments`);
  // An orphan above the floor and a hole low down: the chain starts after the hole.
  await sim.delete([segmentKeys(incarnation, sealed[1]!.startOffset, null).log]);
  const floor = sealed[sealed.length - 2]!.endOffset + 1;
  const { transfer } = transferOf(store, { purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: 0 });
  const seed = await transfer.seedFor(address, revision);
  t.same(
    seed!.markers.map((m) => m.startOffset),
    sealed.slice(2, -1).map((s) => s.startOffset),
    "from the segment after the hole to the one below the floor",
  );
  t.same(seed!.epochs, [{ epoch: 3, startOffset: sealed[2]!.startOffset }]);
  // Below the committed deleted watermark: deleted by retention, not taken even while it is listed.
  const deleted = sealed[4]!.startOffset;
  const after = await transferOf(store, { purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: deleted })
    .transfer.seedFor(address, revision);
  t.same(
    after!.markers.map((m) => m.startOffset),
    sealed.slice(4, -1).map((s) => s.startOffset),
    "from the deleted watermark up",
  );
});

t.test("nothing committed: no seed; a floor the bucket does not back: a typed refusal", async (t) => {
  const { sealed, sim, store } = await leaderWithBucket(t, [1], 20);
  t.equal(await transferOf(store, null).transfer.seedFor(address, revision), null, "no floor");
  t.equal(
    await transferOf(store, { purgeGeneration: 0, upToOffset: 0, deletedUpToOffset: 0 }).transfer.seedFor(
      address,
      revision,
    ),
    null,
    "a floor of 0",
  );
  const floor = sealed.at(-1)!.endOffset + 1;
  await sim.delete([segmentKeys(incarnation, sealed.at(-1)!.startOffset, null).log]);
  await t.rejects(
    transferOf(store, { purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: 0 }).transfer.seedFor(
      address,
      revision,
    ),
    new StateTransferError(`no object ends just below the committed floor ${floor}`),
  );
  // Another incarnation's objects (another created revision) are never taken.
  await t.rejects(
    transferOf(store, { purgeGeneration: 0, upToOffset: sealed[0]!.endOffset + 1, deletedUpToOffset: 0 })
      .transfer.seedFor(
        address,
        "fedcba9876543210",
      ),
    StateTransferError,
  );
});

t.test("a seeding cut short leaves no superblock, and the next one starts from an empty directory", async (t) => {
  const { sealed, store, disk, clock } = await leaderWithBucket(t, [4], 20);
  const floor = sealed.at(-1)!.endOffset + 1;
  const seed =
    (await transferOf(store, { purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: 0 }).transfer
      .seedFor(
        address,
        revision,
      ))!;
  const dataPath = tempDir(t);
  const pdir = `${dataPath}/streams/1/topics/2/partitions/0`;
  await disk.mkdirp(pdir);
  // Leftovers of an earlier attempt: a stray marker and log a crash left behind.
  await disk.open(`${pdir}/00000000000000099999.remote`, { create: true }).then((f) => f.close());
  await disk.open(`${pdir}/00000000000000099999.log`, { create: true }).then((f) => f.close());
  await writeSeededPartition(disk, pdir, seed);
  t.notOk((await disk.list(pdir)).some((n) => n.includes("99999")), "the leftovers are gone");
  const replica = await Partition.open(disk, clock, dataPath, address, logConfig, quiet);
  t.teardown(() => replica.close());
  t.equal(replica.log.nextOffset, floor);
  await t.rejects(
    writeSeededPartition(disk, pdir, { ...seed, tieredUpToOffset: floor + 1 }),
    /not below/,
    "a seed whose chain does not reach its floor is refused before anything is written",
  );
});

t.test("a restored partition seeds from its source's chain, then from its own from where the restore's ends", async (t) => {
  const { sealed, sim, store } = await leaderWithBucket(t, [4], 40);
  t.ok(sealed.length >= 6, `${sealed.length} sealed segments`);
  // The leader's objects are the source's; the restoring cluster "new" uploads under its own keys.
  const below = sealed[2]!.endOffset + 1;
  const source = {
    clusterId: "c0ffee",
    ...address,
    createdRevision: revision,
    purgeGeneration: 0,
    belowOffset: below,
  };
  const restored = { source, fromOffset: 0 };
  const seedWith = (floor: CommittedFloor | null) =>
    new BucketStateTransfer({
      store,
      prefix: "strata",
      clusterId: "new",
      committedFloor: () => Promise.resolve(floor),
      logger: quiet,
    }).seedFor(address, revision, restored);
  const startsOf = (segments: typeof sealed) => segments.map((s) => s.startOffset);
  const first = await seedWith(null);
  t.same(first!.markers.map((m) => m.startOffset), startsOf(sealed.slice(0, 3)), "nothing of its own yet");
  t.equal(first!.tieredUpToOffset, below);
  t.same(first!.restoredFrom, source, "the source's keys below the restore's end");
  const own = { ...incarnation, clusterId: "new" };
  for (const s of sealed.slice(3, 5)) {
    const [from, to] = [segmentKeys(incarnation, s.startOffset, null), segmentKeys(own, s.startOffset, null)];
    for (const file of ["log", "index"] as const) {
      const head = (await sim.head(from[file]))!;
      const bytes = await sim.getRange(from[file], 0, head.sizeBytes);
      await sim.put(to[file], async function* () {
        yield* bytes;
      }, { sizeBytes: head.sizeBytes, metadata: head.metadata, ifAbsent: false });
    }
  }
  const floor = sealed[4]!.endOffset + 1;
  const second = await seedWith({ purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: 0 });
  t.same(
    second!.markers.map((m) => m.startOffset),
    startsOf(sealed.slice(0, 5)),
    "the source's, then its own",
  );
  t.equal(second!.tieredUpToOffset, floor);
  const retained = await seedWith({
    purgeGeneration: 0,
    upToOffset: floor,
    deletedUpToOffset: sealed[1]!.startOffset,
  });
  t.same(
    retained!.markers.map((m) => m.startOffset),
    startsOf(sealed.slice(1, 5)),
    "from the deleted watermark",
  );
  const past = await seedWith({
    purgeGeneration: 0,
    upToOffset: floor,
    deletedUpToOffset: sealed[3]!.startOffset,
  });
  t.same(
    past!.markers.map((m) => m.startOffset),
    startsOf(sealed.slice(3, 5)),
    "retention passed the restored part",
  );
  const later = await new BucketStateTransfer({
    store,
    prefix: "strata",
    clusterId: "new",
    committedFloor: () => Promise.resolve(null),
    logger: quiet,
  }).seedFor(address, revision, { source, fromOffset: sealed[1]!.startOffset });
  t.same(
    later!.markers.map((m) => m.startOffset),
    startsOf(sealed.slice(1, 3)),
    "from where the restore's chain starts",
  );
  await sim.delete([segmentKeys(own, sealed[3]!.startOffset, null).log]);
  await t.rejects(
    seedWith({ purgeGeneration: 0, upToOffset: floor, deletedUpToOffset: 0 }),
    StateTransferError,
    "its own chain must meet the restored one",
  );
});
