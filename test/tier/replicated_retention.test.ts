import t, { type Test } from "tap";
import { Partition } from "../../src/log/partition/partition.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { Logger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import type { ControlCommand, ControlLog, SubmitPrecondition } from "../../src/tier/control/control_log.ts";
import { deletedCommitRetryMs, ReplicatedRetention } from "../../src/tier/replicated_retention.ts";
import type { TieredPartition } from "../../src/tier/tier_service.ts";
import { tempDir } from "../helpers/temp_dir.ts";

await initCrc32c();
const address = { streamId: 1, topicId: 2, partitionId: 0 };
const key = "1/2/0";

/** A partition of `segments` sealed segments of 5 records each, and an active one. */
async function partitionOf(t: Test, segments: number) {
  const clock = new VirtualClock();
  const partition = await Partition.create(new NodeDisk(), clock, "0123456789abcdef", tempDir(t), address, {
    segmentSizeBytes: 5 * 1000,
    segmentMaxAgeMs: null,
    indexIntervalBytes: 4096,
    fsync: "interval",
    fsyncIntervalMs: 1000,
    writeQueueMax: 100,
  });
  t.teardown(() => partition.close());
  for (let i = 0; i < 5 * segments; i++) {
    await partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(990) }]);
  }
  t.ok(partition.log.segments.length > segments, `${partition.log.segments.length} segments`);
  return partition;
}

/** A control log that records submissions and fails the first `failures` of them. */
function controlLog(failures = 0) {
  const submitted: { command: ControlCommand; precondition: SubmitPrecondition }[] = [];
  let failing = failures;
  const log = {
    submit: (command: ControlCommand, precondition: SubmitPrecondition) => {
      submitted.push({ command, precondition });
      return failing-- > 0 ? Promise.reject(new Error("etcd is away")) : Promise.resolve(submitted.length);
    },
  } as unknown as ControlLog;
  return { log, submitted };
}

function retentionOf(
  partition: Partition | null,
  options: { clustered: boolean; term?: number; log?: ControlLog; lines?: string[] },
) {
  const tiered: TieredPartition | undefined = partition === null ? undefined : {
    key,
    partition,
    tiered: () => true,
    envelope: () => ({ ageMs: null, sizeBytes: null }),
  };
  return new ReplicatedRetention({
    logger: new Logger({ level: "warn", sink: (line) => options.lines?.push(line) }),
    clustered: options.clustered,
    partition: (k) => (k === key ? tiered : undefined),
    termOf: () => options.term,
    control: () => options.log ?? null,
  });
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test("retention by the topic's limits runs everywhere on one node, only on the leader in a cluster", (t) => {
  t.ok(retentionOf(null, { clustered: false }).decidesHere(key), "a single node");
  t.ok(retentionOf(null, { clustered: true, term: 3 }).decidesHere(key), "the leader");
  t.notOk(retentionOf(null, { clustered: true }).decidesHere(key), "a follower");
  t.end();
});

t.test("the leader commits its watermark under its epoch; a failed commit is tried again after the pause", async (t) => {
  const partition = await partitionOf(t, 4);
  const second = partition.log.segments[2]!.startOffset;
  t.ok(await partition.enforceRetention((s) => s.endOffset < second) > 0, "the leader's own pass deleted");
  const { log, submitted } = controlLog(1);
  const retention = retentionOf(partition, { clustered: true, term: 7, log });
  retention.deleted(key, 1000);
  retention.onTick(999);
  t.equal(submitted.length, 0, "not before it is due");
  retention.onTick(1000);
  t.same(submitted.map((s) => s.precondition), [{ expectedEpoch: 7 }], "submitted under the leader's epoch");
  t.same(submitted[0]!.command, {
    kind: "advance_deleted_up_to",
    partition: key,
    purgeGeneration: 0,
    upToOffset: second,
  });
  await settle();
  retention.onTick(1000 + deletedCommitRetryMs - 1);
  t.equal(submitted.length, 1, "a failed commit waits for the pause");
  retention.onTick(1000 + deletedCommitRetryMs);
  t.equal(submitted.length, 2, "then it is tried again");
  await settle();
  retention.onTick(1000 + 10 * deletedCommitRetryMs);
  t.equal(submitted.length, 2, "a commit that succeeded is not repeated");
  // On a single node nothing is committed.
  const single = controlLog();
  const alone = retentionOf(partition, { clustered: false, term: 0, log: single.log });
  alone.deleted(key, 0);
  alone.onTick(1_000_000);
  t.equal(single.submitted.length, 0);
});

t.test("a replica deletes what the committed watermark says, across as many passes as it takes", async (t) => {
  const partition = await partitionOf(t, 40);
  const segments = partition.log.segments;
  const upTo = segments[35]!.startOffset;
  const lines: string[] = [];
  const retention = retentionOf(partition, { clustered: true, lines });
  await retention.apply({
    kind: "advance_deleted_up_to",
    partition: key,
    purgeGeneration: 0,
    upToOffset: upTo,
  });
  t.equal(partition.log.firstOffset, upTo, "every segment below the watermark is gone");
  t.equal(partition.superblock.deletedUpToOffset, upTo, "and the superblock says so");
  const before = partition.log.segments.length;
  await retention.apply({
    kind: "advance_deleted_up_to",
    partition: key,
    purgeGeneration: 0,
    upToOffset: upTo - 5,
  });
  t.equal(partition.log.segments.length, before, "a lower watermark deletes nothing");
  await retention.apply({
    kind: "advance_deleted_up_to",
    partition: key,
    purgeGeneration: 1,
    upToOffset: upTo + 20,
  });
  t.equal(partition.log.firstOffset, upTo, "nor one of another purge generation");
  t.match(lines.join("\n"), /another purge generation/, "which is logged");
  // The active segment is never deleted, whatever the watermark.
  await retention.apply({
    kind: "advance_deleted_up_to",
    partition: key,
    purgeGeneration: 0,
    upToOffset: partition.log.nextOffset + 100,
  });
  t.equal(partition.log.segments.length, 1, "only the active segment is left");
});
