import t from "tap";
import { Partition } from "../../src/log/partition/partition.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { SimDisk } from "../../src/sim/sim_disk.ts";

await initCrc32c();
const bytes = (...values: number[]) => new Uint8Array(values);

t.test("files, directories and names behave as a file system's", async (t) => {
  const disk = new SimDisk(new Rng(1));
  await disk.mkdirp("/d/e");
  const f = await disk.createExclusive("/d/e/a");
  await f.writeAt(bytes(1, 2, 3), 0);
  await f.append(bytes(4));
  t.equal(await f.sizeBytes(), 4);
  const read = new Uint8Array(10);
  t.equal(await f.readAt(read, 1), 3);
  t.same([...read.subarray(0, 3)], [2, 3, 4]);
  await f.close();
  t.same(await disk.list("/d"), ["e"]);
  t.same(await disk.list("/d/e"), ["a"]);
  await t.rejects(disk.createExclusive("/d/e/a"), { code: "exists" });
  await disk.rename("/d/e/a", "/d/e/b");
  await disk.link("/d/e/b", "/d/e/c");
  await disk.unlink("/d/e/b");
  t.same(await disk.list("/d/e"), ["c"]);
  t.same([...disk.peek("/d/e/c")!], [1, 2, 3, 4]);
  t.equal(await disk.stat("/d/e/b"), null);
  t.match(await disk.stat("/d"), { isDirectory: true });
  await t.rejects(disk.open("/d/e/missing"), { code: "not_found" });
  await disk.removeTree("/d");
  t.equal(await disk.stat("/d/e/c"), null);
});

t.test("a crash keeps synced bytes, and of later writes only a prefix, the last possibly torn", async (t) => {
  const outcomes = new Set<string>();
  for (let seed = 0; seed < 200; seed++) {
    const disk = new SimDisk(new Rng(seed));
    await disk.mkdirp("/d");
    const f = await disk.createExclusive("/d/f");
    await f.writeAt(bytes(1, 1, 1, 1), 0);
    await f.sync();
    await disk.fsyncDir("/d");
    await f.append(bytes(2, 2, 2, 2));
    await f.append(bytes(3, 3, 3, 3));
    disk.crash();
    const data = [...disk.peek("/d/f")!];
    t.same(data.slice(0, 4), [1, 1, 1, 1], "synced bytes survive") || t.bailout();
    const after = data.slice(4);
    const written = [2, 2, 2, 2, 3, 3, 3, 3];
    t.same(after, written.slice(0, after.length), "what survives is a prefix of the writes") || t.bailout();
    outcomes.add(String(after.length));
    await t.rejects(f.readAt(new Uint8Array(1), 0), { code: "io" }, "handles die with the process");
  }
  t.ok(outcomes.has("0") && outcomes.has("8"), `nothing and everything both happen (${[...outcomes]})`);
  t.ok([...outcomes].some((n) => n !== "0" && n !== "4" && n !== "8"), "and torn writes");
});

t.test("directory changes survive a crash only once the directory is fsynced", async (t) => {
  let lost = 0;
  for (let seed = 0; seed < 100; seed++) {
    const disk = new SimDisk(new Rng(seed));
    await disk.mkdirp("/d");
    const f = await disk.createExclusive("/d/new");
    await f.sync();
    await f.close();
    disk.crash();
    if (disk.peek("/d/new") === null) lost++;

    const synced = new SimDisk(new Rng(seed));
    await synced.mkdirp("/d");
    const g = await synced.createExclusive("/d/tmp");
    await g.writeAt(bytes(9), 0);
    await g.sync();
    await synced.rename("/d/tmp", "/d/final");
    await synced.fsyncDir("/d");
    synced.crash();
    t.same([...(synced.peek("/d/final") ?? [])], [9], "renamed and fsynced: always there") || t.bailout();
    t.equal(synced.peek("/d/tmp"), null);
  }
  t.ok(lost > 0 && lost < 100, `a file created without fsyncDir was lost in ${lost} of 100 crashes`);
});

t.test("the same seed makes the same crash", async (t) => {
  const run = async (seed: number) => {
    const disk = new SimDisk(new Rng(seed));
    await disk.mkdirp("/d");
    const f = await disk.createExclusive("/d/f");
    for (let i = 0; i < 20; i++) await f.append(new Uint8Array(7).fill(i));
    disk.crash();
    return [...(disk.peek("/d/f") ?? [])].join(",");
  };
  t.equal(await run(42), await run(42));
  const distinct = new Set(await Promise.all([1, 2, 3, 4, 5, 6].map(run)));
  t.ok(distinct.size > 1, "different seeds crash differently");
});

t.test("the real partition log on SimDisk: after any crash every acknowledged message is there", async (t) => {
  const config = {
    segmentSizeBytes: 64 * 1024,
    segmentMaxAgeMs: null,
    indexIntervalBytes: 4096,
    fsync: "always" as const,
    fsyncIntervalMs: 1000,
    writeQueueMax: 1000,
  };
  const address = { streamId: 1, topicId: 1, partitionId: 0 };
  for (let seed = 0; seed < 30; seed++) {
    const rng = new Rng(seed);
    const disk = new SimDisk(rng);
    const clock = new VirtualClock();
    await disk.mkdirp("/data");
    const partition = await Partition.create(disk, clock, rng, "/data", address, config);
    const acknowledged = rng.int(1, 60);
    for (let i = 0; i < acknowledged; i++) {
      await partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(3000).fill(i & 0xff) }]);
    }
    // Writes still queued when the power goes: never acknowledged, so free to vanish.
    void partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(10) }]).catch(() => {});
    disk.crash();
    const reopened = await Partition.open(disk, clock, "/data", address, config, silentLogger());
    const r = await reopened.log.read(0, 10_000, 1 << 30);
    t.ok(
      r.messages.length >= acknowledged,
      `seed ${seed}: ${r.messages.length} of ${acknowledged} read back`,
    ) ||
      t.bailout();
    t.ok(
      r.messages.slice(0, acknowledged).every((m, i) =>
        m.offset === i && m.payload!.every((b) => b === (i & 0xff))
      ),
      `seed ${seed}: byte for byte`,
    ) || t.bailout();
    await reopened.close();
  }
});
