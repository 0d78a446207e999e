import t from "tap";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { Logger } from "../../../src/runtime/logger.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { SimDisk } from "../../../src/sim/sim_disk.ts";
import { CacheAccessTable, isAccessTableFile } from "../../../src/tier/cache/cache_access_table.ts";

await initCrc32c();

// The cache's saved LRU order: written atomically, read back, and an unreadable one ranks
// everything cold rather than failing the open.

const recording = () => {
  const lines: string[] = [];
  return { lines, logger: new Logger({ level: "warn", sink: (line) => lines.push(line) }) };
};

t.test("the order saved is the order read back; saves run one after another, the last one wins", async (t) => {
  const disk = new SimDisk(new Rng(1));
  await disk.mkdirp("/cache");
  const table = new CacheAccessTable(disk, "/cache");
  const { lines, logger } = recording();
  t.same(await table.read(logger), [], "nothing saved yet: no order");
  void table.save(["a", "b"]);
  await table.save(["b", "c", "a"]);
  t.same(await new CacheAccessTable(disk, "/cache").read(logger), ["b", "c", "a"]);
  disk.crash();
  t.same(await table.read(logger), ["b", "c", "a"], "durable across a crash");
  t.same(lines, [], "no warnings");
});

t.test("an unreadable table is logged and ranks every chunk cold", async (t) => {
  const disk = new SimDisk(new Rng(2));
  await disk.mkdirp("/cache");
  const file = await disk.open("/cache/access-table.bin", { create: true });
  await file.writeAt(new TextEncoder().encode("not a record file at all"), 0);
  await file.close();
  const { lines, logger } = recording();
  t.same(await new CacheAccessTable(disk, "/cache").read(logger), []);
  t.equal(lines.length, 1);
  t.match(lines[0], /cache access table unreadable/);
});

t.test("the table's own names, and its temporary file's, are told apart from chunk directories", (t) => {
  t.ok(isAccessTableFile("access-table.bin"));
  t.ok(isAccessTableFile("access-table.bin.tmp"));
  t.notOk(isAccessTableFile("strata"));
  t.end();
});
