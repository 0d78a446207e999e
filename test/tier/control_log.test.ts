import { appendFileSync, readFileSync, statSync, truncateSync } from "node:fs";
import t from "tap";
import { initCrc32c } from "../../src/runtime/crc32c.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { type ControlCommand, LocalControlLog } from "../../src/tier/control_log.ts";
import { tempDir } from "../helpers/temp_dir.ts";

await initCrc32c();
const floor = (upToOffset: number): ControlCommand => ({
  kind: "advance_tiered_floor",
  partition: "p",
  purgeGeneration: 0,
  upToOffset,
});

t.test("submitted commands are committed, applied in order, and replayed in order at reopen", async (t) => {
  const path = `${tempDir(t)}/control/shard-0.log`;
  const applied: string[] = [];
  const log = await LocalControlLog.open(new NodeDisk(), path, (i, c) => {
    applied.push(`${i}:${c.upToOffset}`);
    return Promise.resolve();
  });
  const indexes = await Promise.all([floor(10), floor(20), floor(30)].map((c) => log.submit(c)));
  t.same(indexes, [1, 2, 3]);
  t.equal(log.committed(), 3);
  t.same(applied, ["1:10", "2:20", "3:30"]);
  await log.close();
  const replayed: string[] = [];
  const again = await LocalControlLog.open(new NodeDisk(), path, (i, c) => {
    replayed.push(`${i}:${c.upToOffset}`);
    return Promise.resolve();
  });
  t.same(replayed, ["1:10", "2:20", "3:30"], "a crash between commit and apply is repaired by the replay");
  t.equal(await again.submit(floor(40)), 4, "indexes continue");
  await again.close();
});

t.test("a torn tail is cut at open; the records before it survive", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const log = await LocalControlLog.open(new NodeDisk(), path, () => Promise.resolve());
  await log.submit(floor(10));
  await log.submit(floor(20));
  await log.close();
  const whole = statSync(path).size;
  truncateSync(path, whole - 3);
  appendFileSync(path, new Uint8Array([1, 2]));
  const seen: number[] = [];
  const reopened = await LocalControlLog.open(new NodeDisk(), path, (i) => {
    seen.push(i);
    return Promise.resolve();
  });
  t.same(seen, [1], "only the whole record is applied");
  t.equal(reopened.committed(), 1);
  t.equal(statSync(path).size, whole / 2, "the torn bytes were cut");
  t.equal(await reopened.submit(floor(30)), 2);
  await reopened.close();
});

t.test("snapshots let the log compact, keeping only what no snapshot holds", async (t) => {
  const path = `${tempDir(t)}/shard-0.log`;
  const log = await LocalControlLog.open(new NodeDisk(), path, () => Promise.resolve(), 4096);
  for (let i = 1; i <= 30; i++) await log.submit(floor(i));
  const small = statSync(path).size;
  await log.snapshot(25);
  t.equal(statSync(path).size, small, "under the threshold a snapshot leaves the file alone");
  for (let i = 31; i <= 200; i++) await log.submit(floor(i));
  const big = statSync(path).size;
  t.ok(big > 4096, `${big} bytes before compaction`);
  await log.snapshot(190);
  t.ok(statSync(path).size < big / 10, `${statSync(path).size} bytes after`);
  t.equal(await log.submit(floor(201)), 201, "appends continue after the rewrite");
  await log.close();
  const kept: number[] = [];
  await (await LocalControlLog.open(new NodeDisk(), path, (i) => {
    kept.push(i);
    return Promise.resolve();
  })).close();
  t.same(kept, [191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201]);
  t.ok(readFileSync(path).length > 0);
});
