import t from "tap";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import type {
  ApplyHook,
  ControlCommand,
  ControlLog,
  SubmitPrecondition,
} from "../../src/tier/control/control_log.ts";
import { segmentKeys } from "../../src/tier/bucket/object_keys.ts";
import { LogReadsDisk } from "../helpers/disks/log_reads_disk.ts";
import { RecordingGate } from "../helpers/recording_gate.ts";
import { tierHarness as setup } from "../helpers/tier_harness.ts";
import { passTime, waitFor } from "../helpers/wait_for.ts";

t.test("sealed segments upload oldest first; the floor reaches the last sealed segment; objects match the files", async (t) => {
  const { partition, sim, produce, ticks, lastSealedEnd } = await setup(t, {
    ageMs: null,
    sizeBytes: null,
  });
  await produce(30);
  await waitFor(
    "the floor to reach the last sealed segment",
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    ticks(),
  );
  for (const s of partition.log.segments.filter((x) => x.sealed)) {
    const keys = segmentKeys(
      {
        prefix: "strata",
        clusterId: "c1",
        streamId: 1,
        topicId: 1,
        partitionId: 0,
        createdRevision: partition.superblock.createdRevision,
        purgeGeneration: 0,
      },
      s.startOffset,
      null,
    );
    const object = sim.peek(keys.log);
    t.ok(object, `object for segment ${s.startOffset}`);
    t.equal(
      object?.metadata["crc32"],
      String(crc32(object!.bytes)),
      "its metadata CRC32 matches its bytes",
    );
  }
  t.same(
    partition.log.segments.map((s) => s.location).filter((l) => l === "remote"),
    [],
    "no envelope set: nothing evicted",
  );
});

t.test("eviction keeps the local envelope once the floor has passed", async (t) => {
  const { partition, produce, ticks, lastSealedEnd } = await setup(t, { ageMs: null, sizeBytes: 120_000 });
  await produce(40);
  await waitFor("eviction down to the envelope", () => {
    const local = partition.log.segments.filter((s) => s.location !== "remote").reduce(
      (n, s) => n + s.sizeBytes,
      0,
    );
    return partition.superblock.tieredUpToOffset === lastSealedEnd() + 1 && local <= 120_000 + 50_000;
  }, ticks());
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length > 0, `${remote.length} segments evicted`);
  t.ok(
    remote.every((s) => s.endOffset < partition.superblock.tieredUpToOffset),
    "no segment evicted above the floor",
  );
});

t.test("a store outage stalls the floor and eviction while producing keeps working; all catches up after", async (t) => {
  const { partition, sim, clock, tier, registry, produce, ticks, lastSealedEnd } = await setup(t, {
    ageMs: null,
    sizeBytes: 100_000,
  }, { uploadStallAfterMs: 30_000 });
  const gauge = async () =>
    (await registry.metrics()).split("\n").find((l) =>
      l.startsWith("strata_tier_upload_stalled_partitions ")
    );
  sim.faults = { outages: [{ fromMs: 0, toMs: 60_000 }] };
  await produce(30);
  await waitFor("the clock to reach 20 s", () => clock.nowMs() >= 20_000, ticks());
  t.equal(partition.superblock.tieredUpToOffset, 0, "the floor holds during the outage");
  t.equal(await gauge(), "strata_tier_upload_stalled_partitions 0", "not stalled before upload_stall_after");
  await waitFor("the partition to stall", () => tier.stalledPartitions() > 0, ticks(30_000));
  t.ok(
    clock.nowMs() >= 30_000 && clock.nowMs() < 60_000,
    `stalled at ${clock.nowMs()} ms, within the outage`,
  );
  t.equal(await gauge(), "strata_tier_upload_stalled_partitions 1", "the stalled signal rose");
  t.equal(tier.stalledOffset(), 0, "at the first waiting segment");
  t.same(partition.log.segments.filter((s) => s.location === "remote"), [], "nothing is evicted");
  await produce(10);
  t.equal(partition.log.nextOffset, 40, "producers are unaffected");
  await waitFor(
    "the floor to catch up after the outage",
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    ticks(200_000),
  );
  t.ok(clock.nowMs() >= 60_000);
  t.equal(await gauge(), "strata_tier_upload_stalled_partitions 0", "and the stalled signal fell");
  t.equal(tier.stalledOffset(), null);
});

t.test("await resolves once the floor passes the offset, and times out otherwise", async (t) => {
  const { tier, produce, ticks, partition } = await setup(t, { ageMs: null, sizeBytes: null });
  await produce(12);
  const reached = tier.awaitFloor("1/1/0", 5, 60_000);
  const never = tier.awaitFloor("1/1/0", 1_000_000, 5_000);
  let results: boolean[] = [];
  void Promise.all([reached, never]).then((r) => (results = r));
  await waitFor("both awaits to answer", () => results.length === 2, ticks());
  t.same(results, [true, false]);
  t.ok(partition.superblock.tieredUpToOffset >= 5);
});

t.test("uploads read each .log in pieces and take a turn of the piece gate for each", async (t) => {
  const disk = new LogReadsDisk();
  const gate = new RecordingGate();
  t.teardown(() => gate.stop());
  const { partition, produce, ticks, lastSealedEnd } = await setup(t, { ageMs: null, sizeBytes: null }, {
    disk,
    pieceGate: gate,
  });
  await produce(12);
  await waitFor(
    "the floor to catch up",
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    ticks(),
  );
  t.ok(disk.reads.length > 0, `${disk.reads.length} reads of .log files`);
  t.ok(disk.reads.every((r) => r.lengthBytes <= 16 * 1024), "no read larger than a piece");
  // Two passes (hash, send) over every sealed .log, one turn per piece; the index adds its own.
  const pieces = partition.log.segments.filter((s) => s.sealed)
    .reduce((n, s) => n + Math.ceil(s.sizeBytes / (16 * 1024)), 0);
  t.ok(gate.turnsAt.length >= 2 * pieces, `${gate.turnsAt.length} turns for ${pieces} pieces a pass`);
});

/** A control log in front of the local one whose first `failures` submissions fail, and which can claim another epoch. */
class FaultyControlLog implements ControlLog {
  readonly #inner: ControlLog;
  #failures: number;
  readonly #epoch: number | null;
  readonly submitted: number[] = [];
  constructor(inner: ControlLog, failures: number, epoch: number | null = null) {
    this.#inner = inner;
    this.#failures = failures;
    this.#epoch = epoch;
  }
  epoch(): number {
    return this.#epoch ?? this.#inner.epoch();
  }
  replay(apply: ApplyHook): Promise<void> {
    return this.#inner.replay(apply);
  }
  submit(command: ControlCommand, precondition: SubmitPrecondition): Promise<number> {
    if (command.kind === "advance_tiered_floor") this.submitted.push(command.upToOffset);
    if (this.#failures > 0) {
      this.#failures--;
      return Promise.reject(new Error("Cannot append to the control log: injected failure"));
    }
    return this.#inner.submit(command, precondition);
  }
  committed(): number {
    return this.#inner.committed();
  }
  snapshot(index: number): Promise<void> {
    return this.#inner.snapshot(index);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

t.test("a floor command that fails to commit is submitted again later; the floor moves only once one commits", async (t) => {
  let faulty: FaultyControlLog | null = null;
  const { partition, tier, produce, ticks, lastSealedEnd, registry } = await setup(
    t,
    { ageMs: null, sizeBytes: null },
    { controlLog: (local) => (faulty = new FaultyControlLog(local, 3)) },
  );
  await produce(6);
  const sealedEnd = lastSealedEnd();
  t.ok(sealedEnd > 0, "a sealed segment to upload");
  // Only one segment is sealed, so nothing later can carry the floor past it: the retries must.
  await waitFor("a waiting retry of the failed submission", () => tier.floorRetriesWaiting() === 1, ticks());
  t.equal(partition.superblock.tieredUpToOffset, 0, "a failed submission does not move the floor");
  await waitFor(
    "the floor to move once a submission committed",
    () => partition.superblock.tieredUpToOffset === sealedEnd + 1,
    ticks(),
  );
  t.same(
    faulty!.submitted,
    [sealedEnd + 1, sealedEnd + 1, sealedEnd + 1, sealedEnd + 1],
    "three failures, then the commit",
  );
  t.equal(tier.floorRetriesWaiting(), 0);
  t.match(await registry.metrics(), /strata_tier_floor_retries_waiting 0/);
});

t.test("a fenced floor command (the control log's epoch is not the service's) is not retried and never moves the floor", async (t) => {
  let fenced: FaultyControlLog | null = null;
  const { partition, tier, produce, ticks, lastSealedEnd, registry } = await setup(
    t,
    { ageMs: null, sizeBytes: null },
    // The service submits under epoch 7; the local log, at epoch 0, refuses every command.
    { controlLog: (local) => (fenced = new FaultyControlLog(local, 0, 7)) },
  );
  await produce(12);
  await waitFor(
    "every sealed segment uploaded",
    () => tier.state.partitions.get("1/1/0")!.pending.length === 0 && tier.uploadsInFlight() === 0,
    ticks(),
  );
  await passTime(5_000, ticks().pace);
  t.equal(partition.superblock.tieredUpToOffset, 0, "the floor never moves without a commit");
  t.ok(fenced!.submitted.length >= 2, `${fenced!.submitted.length} commands submitted, every one refused`);
  t.equal(tier.floorRetriesWaiting(), 0, "the core holds no retry after a fence");
  t.ok(lastSealedEnd() > 0);
  t.match(await registry.metrics(), /strata_tier_floor_submissions_failed_total [1-9]/);
});
