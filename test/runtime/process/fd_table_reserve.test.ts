import { readFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { loadConfig } from "../../../src/config/load_config.ts";
import { AssertionError } from "../../../src/runtime/assert.ts";
import type { DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { fdTableReserveMax, growFdTable } from "../../../src/runtime/process/fd_table_reserve.ts";
import { Logger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { reserveFdTable } from "../../../src/server/server.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

/** Counts the descriptors a disk holds; refuses opens beyond `limit`, as a process out of them. */
class DescriptorCountingDisk extends NodeDisk {
  held = 0;
  heldMax = 0;
  creates = 0;
  unlinked: string[] = [];
  constructor(readonly limit = Infinity) {
    super();
  }
  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    if (this.held >= this.limit) throw new Error("EMFILE: too many open files");
    if (options?.create) this.creates++;
    const file = await super.open(path, options);
    this.held++;
    this.heldMax = Math.max(this.heldMax, this.held);
    const close = file.close.bind(file);
    file.close = () => {
      this.held--;
      return close();
    };
    return file;
  }
  override async unlink(path: string): Promise<void> {
    this.unlinked.push(path);
    await super.unlink(path);
  }
}

function scratch(t: Test): string {
  return join(tempDir(t, "strata-fd-"), ".fd-table-reserve");
}

t.test("the reserve holds every descriptor at once, then closes them all and removes its file", async (t) => {
  const disk = new DescriptorCountingDisk();
  const path = scratch(t);
  t.same(await growFdTable(disk, path, 300), { heldMax: 300, error: null });
  t.equal(disk.heldMax, 300, "300 descriptors were open together");
  t.equal(disk.held, 0, "none is left open");
  t.equal(disk.creates, 1, "the file is created once");
  t.same(disk.unlinked, [path]);
  t.equal(await disk.stat(path), null, "the file is gone");
});

t.test("out of descriptors, the reserve stops, closes what it holds and says why", async (t) => {
  const disk = new DescriptorCountingDisk(40);
  const growth = await growFdTable(disk, scratch(t), 100);
  t.equal(growth.heldMax, 40);
  t.match(growth.error, /EMFILE/);
  t.equal(disk.held, 0, "none is left open");
});

t.test("a reserve of 0 opens nothing, and one out of range is refused", async (t) => {
  const disk = new DescriptorCountingDisk();
  t.same(await growFdTable(disk, scratch(t), 0), { heldMax: 0, error: null });
  t.equal(disk.heldMax, 0);
  await t.rejects(growFdTable(disk, scratch(t), fdTableReserveMax + 1), AssertionError);
  await t.rejects(growFdTable(disk, scratch(t), -1), AssertionError);
});

t.test("on Linux the kernel's descriptor table has room for the reserve afterwards", {
  skip: process.platform !== "linux" && "FDSize is read from Linux's /proc",
}, async (t) => {
  const fdSize = () => Number(/FDSize:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))![1]);
  const before = fdSize();
  const reserve = Math.max(2048, before * 2);
  const growth = await growFdTable(new NodeDisk(), scratch(t), reserve);
  // A process whose descriptor limit is below the reserve grows its table as far as it can hold.
  const expected = growth.error === null ? reserve : growth.heldMax;
  t.ok(growth.heldMax > before, `held ${growth.heldMax} descriptors (${growth.error ?? "all"})`);
  t.ok(fdSize() >= expected, `the table grew from ${before} to ${fdSize()} slots`);
});

t.test("the server warns, naming the key, when it cannot hold its reserve", async (t) => {
  const lines: string[] = [];
  const logger = new Logger({ level: "info", sink: (line) => lines.push(line) });
  const dir = tempDir(t, "strata-fd-");
  const { config } = loadConfig(
    `[system]\npath = ${JSON.stringify(dir)}\nfd_table_reserve = 64\n`,
    "t.toml",
    {},
  );
  await reserveFdTable(new DescriptorCountingDisk(10), config, logger);
  const [warning] = lines.map((l) => JSON.parse(l));
  t.match(warning, {
    level: "warn",
    msg: /^Cannot hold 64 descriptors to grow the descriptor table: EMFILE.*; held 10$/,
    key: "[system] fd_table_reserve",
  });
  lines.length = 0;
  await reserveFdTable(new DescriptorCountingDisk(), config, logger);
  t.same(lines, [], "a reserve held in full is silent");
});
