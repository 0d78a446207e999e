import { appendFileSync, readFileSync, statSync, truncateSync } from "node:fs";
import t from "tap";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import {
  type ApplyHook,
  type ControlCommand,
  ControlEpochMismatchError,
  ControlLogClosedError,
} from "../../../src/tier/control/control_log.ts";
import { LocalControlLog } from "../../../src/tier/control/local_control_log.ts";
import { QueueFullError } from "../../../src/runtime/wait_errors.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

await initCrc32c();

/** Opens the log at `path` and replays it through `apply`, as a tier service attaching it does. */
async function openReplayed(path: string, apply: ApplyHook, compactAboveBytes?: number) {
  const log = await LocalControlLog.open(new NodeDisk(), path, compactAboveBytes);
  await log.replay(apply);
  return log;
}
const epoch = { expectedEpoch: 0 };
const floor = (upToOffset: number): ControlCommand => ({
  kind: "advance_tiered_floor",
  partition: "p",
  purgeGeneration: 0,
  upToOffset,
});

t.test("submitted commands are committed, applied in order, and replayed in order at reopen", async (t) => {
  const path = `${tempDir(t)}/control/shard-0.log`;
  const applied: string[] = [];
  const log = await openReplayed(path, (i, c) => {
    applied.push(`${i}:${c.kind === "advance_tiered_floor" ? c.upToOffset : c.kind}`);
    return Promise.resolve();
  });
  const indexes = await Promise.all([floor(10), floor(20), floor(30)].map((c) => log.submit(c, epoch)));
  t.same(indexes, [1, 2, 3]);
  t.equal(log.committed(), 3);
  t.same(applied, ["1:10", "2:20", "3:30"]);
  await log.close();
  const replayed: string[] = [];
  const again = await openReplayed(path, (i, c) => {
    replayed.push(`${i}:${c.kind === "advance_tiered_floor" ? c.upToOffset : c.kind}`);
    return Promise.resolve();
  });
  t.same(replayed, ["1:10", "2:20", "3:30"], "a crash between commit and apply is repaired by the replay");
  t.equal(await again.submit(floor(40), epoch), 4, "indexes continue");
  await again.close();
});

t.test("a torn tail is cut at open; the records before it survive", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const log = await openReplayed(path, () => Promise.resolve());
  await log.submit(floor(10), epoch);
  await log.submit(floor(20), epoch);
  await log.close();
  const whole = statSync(path).size;
  truncateSync(path, whole - 3);
  appendFileSync(path, new Uint8Array([1, 2]));
  const seen: number[] = [];
  const reopened = await openReplayed(path, (i) => {
    seen.push(i);
    return Promise.resolve();
  });
  t.same(seen, [1], "only the whole record is applied");
  t.equal(reopened.committed(), 1);
  t.equal(statSync(path).size, whole / 2, "the torn bytes were cut");
  t.equal(await reopened.submit(floor(30), epoch), 2);
  await reopened.close();
});

t.test("snapshots let the log compact, keeping only what no snapshot holds", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const log = await openReplayed(path, () => Promise.resolve(), 4096);
  for (let i = 1; i <= 30; i++) await log.submit(floor(i), epoch);
  const small = statSync(path).size;
  await log.snapshot(25);
  t.equal(statSync(path).size, small, "under the threshold a snapshot leaves the file alone");
  for (let i = 31; i <= 200; i++) await log.submit(floor(i), epoch);
  const big = statSync(path).size;
  t.ok(big > 4096, `${big} bytes before compaction`);
  await log.snapshot(190);
  t.ok(statSync(path).size < big / 10, `${statSync(path).size} bytes after`);
  t.equal(await log.submit(floor(201), epoch), 201, "appends continue after the rewrite");
  await log.close();
  const kept: number[] = [];
  await (await openReplayed(path, (i) => {
    kept.push(i);
    return Promise.resolve();
  })).close();
  t.same(kept, [191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201]);
  t.ok(readFileSync(path).length > 0);
});

t.test("a submission under another epoch is refused with a typed error and nothing is written", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const applied: number[] = [];
  const log = await openReplayed(path, (i) => {
    applied.push(i);
    return Promise.resolve();
  });
  t.equal(log.epoch(), 0, "the local log's epoch is constant");
  await t.rejects(log.submit(floor(10), { expectedEpoch: 1 }), ControlEpochMismatchError);
  t.equal(log.committed(), 0);
  t.equal(statSync(path).size, 0, "nothing was appended");
  t.equal(await log.submit(floor(20), epoch), 1, "a submission under the log's epoch commits");
  t.same(applied, [1]);
  await log.close();
});

t.test("a submission after close is refused with a typed error; one queued before it is written", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const log = await openReplayed(path, () => Promise.resolve());
  const queued = log.submit(floor(10), epoch);
  const closing = log.close();
  await t.rejects(
    log.submit(floor(20), epoch),
    ControlLogClosedError,
    "an upload that ends while the server stops",
  );
  t.equal(await queued, 1, "the submission before the close is committed");
  await closing;
  const reopened = await openReplayed(path, () => Promise.resolve());
  t.equal(reopened.committed(), 1, "and only it is in the file");
  await reopened.close();
});

t.test("replay runs once, and comes before any submission", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const log = await LocalControlLog.open(new NodeDisk(), path);
  t.throws(() => log.submit(floor(1), epoch), /before the log is replayed/);
  await log.replay(() => Promise.resolve());
  await t.rejects(log.replay(() => Promise.resolve()), /twice/);
  await log.close();
});

t.test("a submission beyond the queue's bound is refused with a typed error, and one after it is taken", async (t) => {
  const path = `${tempDir(t)}/control/shard-0.log`;
  const log = await LocalControlLog.open(new NodeDisk(), path, undefined, 2);
  await log.replay(() => Promise.resolve());
  t.teardown(() => log.close());
  const first = log.submit(floor(1), epoch);
  const second = log.submit(floor(2), epoch);
  await t.rejects(log.submit(floor(3), epoch), new QueueFullError("submit a control command", 2));
  t.same(await Promise.all([first, second]), [1, 2], "the two queued commit");
  t.equal(await log.submit(floor(3), epoch), 3, "room again once they did");
});
