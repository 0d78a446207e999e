import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import type { LogConfig } from "../../src/log/log_config.ts";
import { ReplicaAppendError } from "../../src/log/log_errors.ts";
import { PartitionLog } from "../../src/log/partition/partition_log.ts";
import { producedBatchesMax } from "../../src/log/batch/produced_batches.ts";
import { readRecordBatchHeader } from "../../src/log/batch/record_batch.ts";
import { replicatedRuns } from "../../src/log/batch/replicated_batches.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../helpers/temp_dir.ts";

await initCrc32c();

const config: LogConfig = {
  segmentSizeBytes: 64 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 1000,
};

async function newLog(t: Test, label: string) {
  const disk = new NodeDisk();
  const dir = tempDir(t);
  const log = new PartitionLog(disk, dir, new VirtualClock(), config, [
    await PartitionLog.createSegment(disk, dir, 0),
  ], label);
  t.teardown(() => log.close());
  return { log, dir };
}

const concat = (pieces: Uint8Array[]) => new Uint8Array(Buffer.concat(pieces));

/** Copies the leader's log to the follower as replication would: fetches up to the log end, appends them. */
async function replicate(leader: PartitionLog, follower: PartitionLog, maxBytes: number) {
  for (let rounds = 0; follower.nextOffset < leader.nextOffset; rounds++) {
    if (rounds > 10_000) throw new Error("replication made no progress");
    const from = follower.nextOffset;
    const read = await leader.readBatches(from, maxBytes, leader.nextOffset);
    const starts = new Set(leader.segmentStartsIn(from, read.nextOffset));
    await follower.appendReplicated(concat(read.batches), starts);
    read.release();
  }
}

const message = (i: number) => ({
  key: `k${i}`,
  headers: {},
  payload: new Uint8Array(300 + (i % 7) * 50).fill(i),
});

t.test("a follower's segments are the leader's, byte for byte, with the leader's epochs", async (t) => {
  const leader = await newLog(t, "leader");
  const follower = await newLog(t, "follower");
  leader.log.setReplication({ leaderEpoch: 3, following: false, highWatermark: 0 });
  follower.log.setReplication({ leaderEpoch: -1, following: true, highWatermark: 0 });
  for (let i = 0; i < 600; i++) await leader.log.append([message(i), message(i + 1)]);
  // Budgets of different sizes cut the leader's log at different places than its segments.
  await replicate(leader.log, follower.log, 7000);
  t.equal(follower.log.nextOffset, 1200);
  const files = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".log")).sort();
  t.ok(files(leader.dir).length >= 5, `the leader rolled ${files(leader.dir).length} segments`);
  t.same(files(follower.dir), files(leader.dir), "the same segment boundaries");
  for (const name of files(leader.dir)) {
    t.ok(
      readFileSync(join(follower.dir, name)).equals(readFileSync(join(leader.dir, name))),
      `${name} is identical`,
    );
  }
  const read = await follower.log.readBatches(0, 1 << 20, Infinity);
  t.ok(
    read.batches.every((b) => readRecordBatchHeader(b).partitionLeaderEpoch === 3),
    "every batch carries epoch 3",
  );
  read.release();
});

t.test("a follower far behind takes an answer of more batches than one produce may hold", async (t) => {
  const leader = await newLog(t, "leader");
  const follower = await newLog(t, "follower");
  leader.log.setReplication({ leaderEpoch: 1, following: false, highWatermark: 0 });
  follower.log.setReplication({ leaderEpoch: -1, following: true, highWatermark: 0 });
  const small = (i: number) => ({ key: null, headers: {}, payload: new TextEncoder().encode(`v${i}`) });
  for (let i = 0; i < producedBatchesMax * 2 + 500; i++) await leader.log.append([small(i)]);
  // One answer of every batch (about 2,500 of them), as a leader gives a follower that was paused.
  const read = await leader.log.readBatches(0, 1 << 30, leader.log.nextOffset);
  const bytes = concat(read.batches);
  read.release();
  t.ok(read.batches.length > producedBatchesMax * 2, `${read.batches.length} batches in one answer`);
  const runs = replicatedRuns(bytes);
  t.same(runs.map((r) => r.length > 0), [true, true, true], "three runs");
  t.equal(runs.reduce((n, r) => n + r.length, 0), bytes.length, "the runs cover the answer");
  const starts = new Set(leader.log.segmentStartsIn(0, leader.log.nextOffset));
  const result = await follower.log.appendReplicated(bytes, starts);
  t.equal(follower.log.nextOffset, leader.log.nextOffset, "all of it appended");
  t.equal(result.baseOffset + result.count, leader.log.nextOffset, "the last run's result");
  // A bad length field leaves the rest in one run, which the check refuses.
  const broken = bytes.slice();
  new DataView(broken.buffer).setInt32(8, 1 << 30);
  t.equal(replicatedRuns(broken).length, 1);
});

t.test("a follower that starts to lead seals what it holds first: its segments end where the old leader's did", async (t) => {
  const leader = await newLog(t, "leader");
  const follower = await newLog(t, "follower");
  leader.log.setReplication({ leaderEpoch: 1, following: false, highWatermark: 0 });
  follower.log.setReplication({ leaderEpoch: -1, following: true, highWatermark: 0 });
  for (let i = 0; i < 150; i++) await leader.log.append([message(i)]);
  await replicate(leader.log, follower.log, 1 << 20);
  const oldActiveStart = leader.log.segments.at(-1)!.startOffset;
  t.ok(
    oldActiveStart > 0 && !leader.log.segments.at(-1)!.sealed,
    `the old leader's active segment at ${oldActiveStart}`,
  );
  // The old leader is gone (its active segment stays as it was); the follower leads under epoch 2.
  const end = follower.log.nextOffset;
  follower.log.setReplication({ leaderEpoch: 2, following: false, highWatermark: end });
  await follower.log.append([message(1000)]);
  const starts = follower.log.segments.map((s) => s.startOffset);
  t.same(
    starts.slice(-2),
    [oldActiveStart, end],
    "the held segment sealed at the old end; a new one from there",
  );
  const name = `${String(oldActiveStart).padStart(20, "0")}.log`;
  t.ok(
    readFileSync(join(follower.dir, name)).equals(readFileSync(join(leader.dir, name))),
    "the sealed segment is the old leader's bytes",
  );
  // Leading on under the same epoch, it rolls by size as any leader does, not at every append.
  await follower.log.append([message(1001)]);
  t.equal(follower.log.segments.length, starts.length, "no roll at the second append");
});

t.test("consumers read only below the high watermark; waiting ones wake when it moves", async (t) => {
  const { log } = await newLog(t, "leader");
  log.setReplication({ leaderEpoch: 0, following: false, highWatermark: 0 });
  await log.append([message(1), message(2), message(3)]);
  t.equal(log.nextOffset, 3);
  t.equal(log.highWatermark, 0);
  t.equal((await log.read(0, 10, 1 << 20)).messages.length, 0, "nothing below the watermark yet");
  const waiting = log.waitForAppend(0, 10_000);
  log.setHighWatermark(2);
  await waiting;
  t.same((await log.read(0, 10, 1 << 20)).messages.map((m) => m.offset), [0, 1]);
  const batches = await log.readBatches(0, 1 << 20);
  t.equal(batches.batches.length, 0, "the one batch ends above the watermark");
  batches.release();
  log.setHighWatermark(3);
  const all = await log.readBatches(0, 1 << 20);
  t.equal(all.nextOffset, 3);
  all.release();
  log.setHighWatermark(null);
  t.equal(log.highWatermark, 3, "a single node reads to the end");
});

t.test("batches that do not continue the follower's log are refused and append nothing", async (t) => {
  const leader = await newLog(t, "leader");
  const follower = await newLog(t, "follower");
  for (let i = 0; i < 3; i++) await leader.log.append([message(i)]);
  const read = await leader.log.readBatches(1, 1 << 20, Infinity);
  await t.rejects(follower.log.appendReplicated(concat(read.batches), new Set()), ReplicaAppendError);
  t.equal(follower.log.nextOffset, 0);
  read.release();
});

t.test("a truncation cuts the log at a batch, deep into a sealed segment, and it grows again from there", async (t) => {
  const leader = await newLog(t, "leader");
  const follower = await newLog(t, "follower");
  leader.log.setReplication({ leaderEpoch: 1, following: false, highWatermark: 0 });
  follower.log.setReplication({ leaderEpoch: -1, following: true, highWatermark: 0 });
  for (let i = 0; i < 300; i++) await leader.log.append([message(i)]);
  await replicate(leader.log, follower.log, 50_000);
  const sealedBefore = follower.log.segments.filter((s) => s.sealed).length;
  t.ok(sealedBefore >= 2, `${sealedBefore} sealed segments`);
  // A cut in the middle of the first sealed segment takes every later one with it.
  const cut = 40;
  await follower.log.truncateTo(cut);
  t.equal(follower.log.nextOffset, cut);
  t.equal(follower.log.segments.length, 1, "the segment holding the cut is the active one again");
  follower.log.setHighWatermark(null);
  const reread = await follower.log.read(0, 1000, 1 << 24);
  t.same(reread.messages.map((m) => m.offset), Array.from({ length: cut }, (_, i) => i));
  t.same(follower.log.leaderEpochs.starts(), [{ epoch: 1, startOffset: 0 }]);
  await replicate(leader.log, follower.log, 30_000);
  const files = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".log")).sort();
  t.same(files(follower.dir), files(leader.dir));
  for (const name of files(leader.dir)) {
    t.ok(
      readFileSync(join(follower.dir, name)).equals(readFileSync(join(leader.dir, name))),
      `${name} is identical again`,
    );
  }
});

t.test("leader epochs say where each epoch's records end, and survive a reopen without a lost tail", async (t) => {
  const { LeaderEpochs } = await import("../../src/log/partition/leader_epochs.ts");
  const disk = new NodeDisk();
  const dir = tempDir(t);
  const epochs = LeaderEpochs.empty(disk, dir);
  t.same(epochs.endOffsetFor(3, 50), { epoch: -1, endOffset: 50 }, "no epochs: the log's end");
  epochs.assign(1, 0);
  epochs.assign(1, 5);
  epochs.assign(3, 20);
  epochs.assign(4, 30);
  t.same(epochs.starts(), [{ epoch: 1, startOffset: 0 }, { epoch: 3, startOffset: 20 }, {
    epoch: 4,
    startOffset: 30,
  }]);
  t.same(epochs.endOffsetFor(1, 50), { epoch: 1, endOffset: 20 });
  t.same(
    epochs.endOffsetFor(2, 50),
    { epoch: 1, endOffset: 20 },
    "an epoch this log never had: the one below it",
  );
  t.same(epochs.endOffsetFor(4, 50), { epoch: 4, endOffset: 50 }, "the latest: the log's end");
  t.same(epochs.endOffsetFor(0, 50), { epoch: -1, endOffset: 0 });
  await epochs.persist();
  const reloaded = await LeaderEpochs.load(disk, dir, 25);
  t.same(reloaded.starts().map((s) => s.epoch), [1, 3], "an epoch past the log's end is dropped");
  reloaded.truncateFrom(20);
  t.equal(reloaded.latestEpoch, 1);
});
