import t, { type Test } from "tap";
import { PartitionLog } from "../../src/log/partition/partition_log.ts";
import { CountingDisk } from "../helpers/disks/counting_disk.ts";
import { openServer } from "../helpers/open_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// The shard's log duties (interval fsync, roll by age) follow what is due, not the partition count.

const partitions = 64;

/** Counts `PartitionLog.onTick` calls while the test runs. */
function countTicks(t: Test) {
  const original = PartitionLog.prototype.onTick;
  const counter = { calls: 0 };
  PartitionLog.prototype.onTick = function (this: PartitionLog, nowMs: number) {
    counter.calls++;
    return original.call(this, nowMs);
  };
  t.teardown(() => {
    PartitionLog.prototype.onTick = original;
  });
  return counter;
}

t.test("quiet logs cost the tick nothing, and each written log is fsynced once its interval is up", async (t) => {
  const disk = new CountingDisk();
  const { client, clock } = await openServer(t, { STRATA_SYSTEM_FSYNC: "interval" }, tempDir(t), disk);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions });
  const ticks = countTicks(t);
  for (let p = 0; p < partitions; p++) await c.produce("s", "t", [{ payload: new Uint8Array(10) }], p);
  const syncsBefore = disk.fileSyncs;
  // 900 ms: 90 ticks, inside the 1 s fsync interval. Each written log is looked at once after its
  // write, told when its fsync is due, and then left alone.
  for (let i = 0; i < 90; i++) clock.advance(10);
  t.equal(disk.fileSyncs, syncsBefore, "no fsync before the interval");
  t.ok(ticks.calls <= 2 * partitions, `${ticks.calls} log duties over 90 ticks of ${partitions} logs`);
  const dueCalls = ticks.calls;
  for (let i = 0; i < 20; i++) clock.advance(10);
  await waitFor("every written log's interval fsync", () => disk.fileSyncs >= syncsBefore + partitions, {
    deadlineMs: 10_000,
    pace: realTime(0),
  });
  t.equal(disk.fileSyncs - syncsBefore, partitions, "each written log was fsynced once");
  t.ok(ticks.calls - dueCalls <= 2 * partitions, "the fsyncs were the only duties served");
  const quiet = ticks.calls;
  for (let i = 0; i < 200; i++) clock.advance(10);
  t.ok(ticks.calls - quiet <= partitions, `synced logs are left alone: ${ticks.calls - quiet} duties in 2 s`);
});

t.test("a log rolls by segment_max_age at its due time, with no write to remind it", async (t) => {
  const { client, clock } = await openServer(t);
  const c = client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 2, segment_max_age: "5 s" });
  await c.produce("s", "t", [{ payload: new Uint8Array(10) }], 0);
  const sealed = async () =>
    ((await c.partition("s", "t", 0))["segments"] as { sealed: boolean }[]).filter((s) => s.sealed).length;
  for (let i = 0; i < 490; i++) clock.advance(10);
  t.equal(await sealed(), 0, "not rolled before its age");
  for (let i = 0; i < 20; i++) clock.advance(10);
  await waitFor("the roll by age", async () => (await sealed()) > 0, {
    deadlineMs: 10_000,
    pace: realTime(0),
  });
  t.equal(await sealed(), 1, "rolled once its first message was 5 s old");
});
