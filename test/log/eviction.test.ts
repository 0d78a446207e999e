import { appendFileSync, existsSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import t, { type Test } from "tap";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import type { LogConfig } from "../../src/log/log_config.ts";
import { PartitionRefusedError, RemoteReadUnavailableError } from "../../src/log/log_errors.ts";
import { PartitionLog } from "../../src/log/partition/partition_log.ts";
import { recoverSegments } from "../../src/log/segment/recover_segments.ts";
import { encodeRemoteMarker, type RemoteMarker } from "../../src/log/remote/remote_marker.ts";
import { readRemoteTable, remoteTableName } from "../../src/log/remote/remote_table.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { CrashingDisk } from "../helpers/disks/crashing_disk.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// Local eviction as a behaviour across files, end to end on real disk: the pass the partition log
// runs (partition_log.ts, evictLocal), its durable steps (segment_eviction.ts, whose own steps are
// tested in segment_eviction.test.ts), and the boot of an evicted chain, with crashes between the
// steps (recover_segments.ts).
await initCrc32c();
const config: LogConfig = {
  segmentSizeBytes: 2000,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 512,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
const identity = { createdRevision: "00000000000000aa", purgeGeneration: 0 };
const never = () => false;

/** A log with 30 single-message batches of 500 bytes: several sealed segments. */
async function filledLog(t: Test, disk: Disk = new NodeDisk(), dir = tempDir(t)) {
  const log = new PartitionLog(disk, dir, new VirtualClock(), config, [
    await PartitionLog.createSegment(disk, dir, 0),
  ], "t");
  for (let i = 0; i < 30; i++) {
    await log.append([{ key: null, headers: {}, payload: new Uint8Array(500).fill(i) }]);
  }
  return { log, dir };
}

const reopen = async (dir: string) => {
  const report = await recoverSegments(
    new NodeDisk(),
    dir,
    config.indexIntervalBytes,
    "t",
    silentLogger(),
    identity,
  );
  return new PartitionLog(
    new NodeDisk(),
    dir,
    new VirtualClock(),
    config,
    report.segments,
    "t",
    undefined,
    report.table,
  );
};

/** The live markers of the remote table in `dir`. */
async function tableMarkers(dir: string): Promise<RemoteMarker[]> {
  return (await readRemoteTable(new NodeDisk(), dir))?.markers() ?? [];
}

t.test("eviction below the floor: marker, .log gone, .index kept, totals unchanged, reads of it answer unavailable", async (t) => {
  const { log, dir } = await filledLog(t);
  t.teardown(() => log.close());
  const before = log.stats();
  const floor = before.segments[3]!.startOffset;
  const logBytes = readFileSync(`${dir}/${String(0).padStart(20, "0")}.log`);
  t.equal(await log.evictLocal(floor, identity, never), 3, "the three segments wholly below the floor");
  const after = log.stats();
  t.same(after.segments.map((s) => s.location), [
    "remote",
    "remote",
    "remote",
    ...after.segments.slice(3).map(() => "local"),
  ]);
  t.equal(after.sizeBytes, before.sizeBytes, "totals still include evicted segments");
  const stem = String(0).padStart(20, "0");
  t.notOk(existsSync(`${dir}/${stem}.log`), ".log unlinked");
  t.ok(existsSync(`${dir}/${stem}.index`), ".index kept");
  const [marker] = await tableMarkers(dir);
  t.match(marker, {
    startOffset: 0,
    endOffset: before.segments[0]!.endOffset,
    sizeBytes: logBytes.length,
    ...identity,
  });
  t.equal(marker!.logCrc32, crc32(logBytes), "the marker carries the log's CRC32");
  await t.rejects(
    log.read(0, 1, 1000),
    RemoteReadUnavailableError,
    "an evicted range is never served wrong or missing",
  );
  t.equal((await log.read(floor, 1, 1000)).messages[0]!.offset, floor, "local data still reads");
});

t.test("the local envelope stops eviction, and a pass evicts at most 16", async (t) => {
  const { log } = await filledLog(t);
  t.teardown(() => log.close());
  const keepLastTwo = (_s: unknown, localBytes: number) => localBytes <= 3 * 2000;
  const evicted = await log.evictLocal(Infinity, identity, keepLastTwo);
  const local = log.stats().segments.filter((s) => s.location !== "remote");
  t.ok(
    evicted > 0 && local.reduce((n, s) => n + s.sizeBytes, 0) <= 3 * 2000 + 2000,
    `evicted ${evicted}, kept ${local.length} local`,
  );
  const { log: big } = await filledLog(t, new NodeDisk());
  t.teardown(() => big.close());
  for (let i = 0; i < 200; i++) await big.append([{ key: null, headers: {}, payload: new Uint8Array(1500) }]);
  t.equal(await big.evictLocal(Infinity, identity, never), 16, "one pass, at most 16");
});

t.test("boot: marker-only stems are tiered, marker plus log is uploaded and local; offsets and data survive", async (t) => {
  const { log, dir } = await filledLog(t);
  const floor = log.stats().segments[3]!.startOffset;
  await log.evictLocal(floor, identity, never);
  // A marker appended before a crash, the .log not yet unlinked: the segment is local, evictable
  // without re-upload.
  const third = log.stats().segments[3]!;
  appendFileSync(
    `${dir}/${remoteTableName}`,
    encodeRemoteMarker({
      startOffset: third.startOffset,
      endOffset: third.endOffset,
      sizeBytes: third.sizeBytes,
      indexSizeBytes: 0,
      startTimestampUs: 1,
      endTimestampUs: 1,
      maxTimestampUs: 1,
      ...identity,
      logCrc32: 1,
      merged: false,
    }),
  );
  const next = log.nextOffset;
  await log.close();
  const reopened = await reopen(dir);
  t.teardown(() => reopened.close());
  t.same(reopened.stats().segments.slice(0, 5).map((s) => s.location), [
    "remote",
    "remote",
    "remote",
    "uploaded",
    "local",
  ]);
  t.equal(reopened.nextOffset, next);
  const read = await reopened.read(third.startOffset, 100, 1 << 20);
  t.same(
    read.messages.map((m) => m.payload![0]),
    Array.from({ length: 30 - third.startOffset }, (_, i) => third.startOffset + i),
  );
});

t.test("boot refuses a stale marker and a tiered segment after a local one", async (t) => {
  const { log, dir } = await filledLog(t);
  await log.evictLocal(log.stats().segments[2]!.startOffset, identity, never);
  await log.close();
  await t.rejects(
    recoverSegments(new NodeDisk(), dir, 512, "t", silentLogger(), {
      createdRevision: "00000000000000bb",
      purgeGeneration: 0,
    }),
    /stale marker .* quarantined/,
  );
  await t.rejects(
    recoverSegments(new NodeDisk(), dir, 512, "t", silentLogger(), { ...identity, purgeGeneration: 1 }),
    PartitionRefusedError,
  );
  // Evicted segments 0 and 1; restore 0's .log so that 1 (tiered) follows a local segment.
  const { log: other, dir: otherDir } = await filledLog(t);
  const first = readFileSync(`${otherDir}/${String(0).padStart(20, "0")}.log`);
  await other.evictLocal(other.stats().segments[2]!.startOffset, identity, never);
  await other.close();
  writeFileSync(`${otherDir}/${String(0).padStart(20, "0")}.log`, first);
  await t.rejects(
    recoverSegments(new NodeDisk(), otherDir, 512, "t", silentLogger(), identity),
    /tiered segments must be a prefix/,
    "marker 0 with its .log is uploaded (local), so tiered segment 1 after it is refused",
  );
});

t.test("crash at every durable step of an eviction: each reboot gives a contiguous, readable chain and loses nothing", async (t) => {
  const outcomes: string[] = [];
  for (let crashAt = 1; crashAt <= 12; crashAt++) {
    const dir = tempDir(t);
    // Fill with a healthy disk, then evict through one that dies at the crashAt-th durable step.
    const { log } = await filledLog(t, new NodeDisk(), dir);
    const floor = log.stats().segments[2]!.startOffset;
    const next = log.nextOffset;
    await log.close();
    const crashing = new CrashingDisk(crashAt);
    const report = await recoverSegments(new NodeDisk(), dir, 512, "t", silentLogger(), identity);
    for (const s of report.segments) await s.logFile?.close();
    const dying = await (async () => {
      const r = await recoverSegments(crashing, dir, 512, "t", silentLogger(), identity);
      return new PartitionLog(crashing, dir, new VirtualClock(), config, r.segments, "t", undefined, r.table);
    })().catch(() => null);
    if (dying !== null) await dying.evictLocal(floor, identity, never).catch(() => {});
    const rebooted = await reopen(dir);
    const segments = rebooted.stats().segments;
    const contiguous = segments.every((s, i) => i === 0 || s.startOffset === segments[i - 1]!.endOffset + 1);
    const localFrom = segments.find((s) => s.location !== "remote")!.startOffset;
    const read = await rebooted.read(localFrom, 1000, 1 << 24);
    const intact = read.messages.every((m) => m.payload![0] === m.offset) && read.nextOffset === next;
    outcomes.push(`${crashAt}:${contiguous && intact && segments[0]!.startOffset === 0 ? "ok" : "BAD"}`);
    await rebooted.close();
  }
  t.same(outcomes.filter((o) => o.endsWith("BAD")), [], `reboots: ${outcomes.join(" ")}`);
});

t.test("the remote table's torn tail is cut at boot: the segments it names keep their .log and stay local", async (t) => {
  const { log, dir } = await filledLog(t);
  await log.evictLocal(log.stats().segments[2]!.startOffset, identity, never);
  const sealed = log.stats().segments[2]!;
  await log.close();
  const whole = readFileSync(`${dir}/${remoteTableName}`).length;
  // A crash part-way through the append of the next segment's record.
  appendFileSync(`${dir}/${remoteTableName}`, new Uint8Array(50).fill(9));
  const reopened = await reopen(dir);
  t.teardown(() => reopened.close());
  t.same(reopened.stats().segments.slice(0, 3).map((s) => s.location), ["remote", "remote", "local"]);
  t.equal(reopened.stats().segments[2]!.startOffset, sealed.startOffset);
  t.equal(readFileSync(`${dir}/${remoteTableName}`).length, whole, "the torn bytes are cut");
  t.equal(
    await reopened.evictLocal(sealed.endOffset + 1, identity, never),
    1,
    "and eviction goes on after it",
  );
  t.equal((await tableMarkers(dir)).length, 3);
});

t.test("marker files of the layout before the table are folded into it at boot, and removed", async (t) => {
  const { log, dir } = await filledLog(t);
  await log.evictLocal(log.stats().segments[2]!.startOffset, identity, never);
  await log.close();
  // The older layout: one file per marker, and no table.
  const markers = await tableMarkers(dir);
  unlinkSync(`${dir}/${remoteTableName}`);
  for (const m of markers) {
    writeFileSync(`${dir}/${String(m.startOffset).padStart(20, "0")}.remote`, encodeRemoteMarker(m));
  }
  const reopened = await reopen(dir);
  t.teardown(() => reopened.close());
  t.same(reopened.stats().segments.slice(0, 3).map((s) => s.location), ["remote", "remote", "local"]);
  t.same(await tableMarkers(dir), markers, "the table holds them");
  t.same(readdirSync(dir).filter((n) => n.endsWith(".remote")), [], "and the files are gone");
});

t.test("an older layout's marker file left empty or torn by a crash before its sync: beside its .log it is removed and the segment stays local; alone it refuses", async (t) => {
  const { log, dir } = await filledLog(t);
  const sealed = log.stats().segments.filter((s) => s.location === "local").slice(0, 2);
  await log.close();
  const stem = (offset: number) => `${dir}/${String(offset).padStart(20, "0")}`;
  // Segment 0: the marker's name survived the crash but not its bytes; segment 1: half of them.
  writeFileSync(`${stem(sealed[0]!.startOffset)}.remote`, new Uint8Array(0));
  writeFileSync(`${stem(sealed[1]!.startOffset)}.remote`, new Uint8Array(64).fill(7));
  const reopened = await reopen(dir);
  t.teardown(() => reopened.close());
  t.same(reopened.stats().segments.slice(0, 2).map((s) => s.location), ["local", "local"]);
  t.notOk(existsSync(`${stem(sealed[0]!.startOffset)}.remote`), "the empty marker is gone");
  t.notOk(existsSync(`${stem(sealed[1]!.startOffset)}.remote`), "the torn marker is gone");
  const read = await reopened.read(0, 30, 1 << 20);
  t.equal(read.messages.length, 30, "every message reads back");

  // Without its .log an unreadable marker is real damage: the partition is refused, not guessed at.
  const { log: other, dir: otherDir } = await filledLog(t);
  const first = other.stats().segments[0]!;
  await other.close();
  const otherStem = `${otherDir}/${String(first.startOffset).padStart(20, "0")}`;
  writeFileSync(`${otherStem}.remote`, new Uint8Array(0));
  unlinkSync(`${otherStem}.log`);
  const refused = await recoverSegments(new NodeDisk(), otherDir, 512, "t", silentLogger(), identity)
    .catch((error: unknown) => error);
  t.ok(refused instanceof PartitionRefusedError, "refused");
  const unreadable = (refused as Error).cause as Error | undefined;
  t.ok(unreadable instanceof Error, "the marker's read error is the cause");
  t.ok((refused as Error).message.endsWith(`: ${unreadable?.message}`), "and the message names it");
});
