import { readFileSync, unlinkSync } from "node:fs";
import t, { type Test } from "tap";
import { Partition } from "../../../src/log/partition/partition.ts";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { crc32 } from "../../../src/runtime/checksum/crc32.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import type { TieredPartition } from "../../../src/tier/tier_service.ts";
import { type StartUpload, type UploadReport, UploadRuns } from "../../../src/tier/upload/upload_runs.ts";
import { logConfig } from "../../helpers/tier_harness.ts";
import { settlesWithin } from "../../helpers/wait_for.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

async function setup(t: Test) {
  const clock = new VirtualClock();
  const disk = new NodeDisk();
  const partition = await Partition.create(disk, clock, new Rng(1), tempDir(t), {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, logConfig);
  t.teardown(() => partition.close());
  for (let i = 0; i < 8; i++) {
    await partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(10_000).fill(i) }]);
  }
  const p: TieredPartition = {
    key: "1/1/0",
    partition,
    tiered: () => true,
    envelope: () => ({ ageMs: null, sizeBytes: null }),
  };
  const sim = new SimObjectStore(clock, new Rng(2));
  const store = new RetryingObjectStore(sim, clock, new Rng(3), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const reports: UploadReport[] = [];
  const reportWaiters: (() => void)[] = [];
  /** Resolves at the next report the runs make. */
  const nextReport = () =>
    settlesWithin(new Promise<void>((resolve) => reportWaiters.push(resolve)), "an upload's report");
  const checksums: string[] = [];
  const runs = new UploadRuns({
    clock,
    rng: new Rng(4),
    logger: silentLogger(),
    config: { prefix: "strata", clusterId: "c1", segmentUploadTimeoutMs: 90_000 },
    uploadDeps: () => ({
      disk,
      store,
      pieceBytes: 16 * 1024,
      bandwidth: new TokenBucket(clock, { rateBytesPerSec: "unlimited", waitersMax: 10, name: "upload" }),
    }),
    partition: (key) => (key === p.key ? p : undefined),
    uploaded: (key, start, crc) => checksums.push(`${key}@${start}:${crc}`),
    report: (report) => {
      reports.push(report);
      for (const resolve of reportWaiters.splice(0)) resolve();
    },
  });
  return { runs, reports, nextReport, checksums, partition, sim };
}

const startOf = (partition: Partition, startOffset: number, key = "1/1/0"): StartUpload => {
  const s = partition.log.segments.find((x) => x.startOffset === startOffset)!;
  return {
    kind: "start_upload",
    partition: key,
    generation: 0,
    segment: { startOffset, endOffset: s.endOffset, sizeBytes: s.sizeBytes, sealedAtMs: 0 },
    identity: `${key}:0:${startOffset}`,
    deadlineAtMs: 0,
    resubmission: false,
  };
};

t.test("an upload reports success and hands over the .log's checksum", async (t) => {
  const { runs, reports, nextReport, checksums, partition, sim } = await setup(t);
  const first = partition.log.segments[0]!;
  const reported = nextReport();
  runs.start(startOf(partition, 0));
  t.same(reports, [], "not before the upload ends");
  await reported;
  t.same(reports, [{ kind: "uploaded", partition: "1/1/0", identity: "1/1/0:0:0" }]);
  t.same(checksums, [`1/1/0@0:${crc32(readFileSync(first.logPath))}`]);
  t.ok([...sim.keys()].some((k) => k.endsWith(".log")), "the object is in the store");
});

t.test("a segment that is gone is reported at once; one whose file vanished mid-way, when its open fails", async (t) => {
  const { runs, reports, nextReport, partition } = await setup(t);
  runs.start(startOf(partition, 0, "9/9/9"));
  t.same(reports, [{ kind: "segment_deleted", partition: "9/9/9", startOffset: 0 }], "synchronously");
  reports.length = 0;
  unlinkSync(partition.log.segments[0]!.logPath);
  const reported = nextReport();
  runs.start(startOf(partition, 0));
  t.same(reports, [], "not before its open fails");
  await reported;
  t.same(reports, [{ kind: "segment_deleted", partition: "1/1/0", startOffset: 0 }]);
});
