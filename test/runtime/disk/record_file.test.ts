import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import {
  CorruptRecordError,
  readRecordFile,
  writeRecordFile,
} from "../../../src/runtime/disk/record_file.ts";
import { readSmallFileByOpen } from "../../../src/runtime/disk/file_ops.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const magic = "TESTREC1";

t.before(() => initCrc32c());

t.test("a record written is read back as it was, and a missing file reads as null", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  t.equal(await readRecordFile(disk, join(dir, "record.bin"), magic), null);
  const value = { name: "orders", offsets: [0, 17, 4096], nested: { on: true } };
  await writeRecordFile(disk, dir, "record.bin", magic, value);
  t.same(await readRecordFile(disk, join(dir, "record.bin"), magic), value);
  t.notOk(existsSync(join(dir, "record.bin.tmp")), "the temp file was renamed into place");
  const bytes = readFileSync(join(dir, "record.bin"));
  t.equal(new TextDecoder().decode(bytes.subarray(0, 8)), magic, "the file starts with its magic");
  t.equal(bytes.readUInt32LE(8), bytes.length - 16, "then the payload's length");
});

t.test("a rewrite replaces the whole record, and a torn temp file left beside it is ignored", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  await writeRecordFile(disk, dir, "record.bin", magic, { generation: 1, padding: "x".repeat(500) });
  await writeRecordFile(disk, dir, "record.bin", magic, { generation: 2 });
  writeFileSync(join(dir, "record.bin.tmp"), new Uint8Array([1, 2, 3]));
  t.same(await readRecordFile(disk, join(dir, "record.bin"), magic), { generation: 2 });
});

t.test("a damaged record is a CorruptRecordError that names the file and the damage", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  await writeRecordFile(disk, dir, "good.bin", magic, { value: 42 });
  const good = readFileSync(join(dir, "good.bin"));
  const damaged = (name: string, change: (bytes: Uint8Array) => Uint8Array) => {
    writeFileSync(join(dir, name), change(new Uint8Array(good)));
    return readRecordFile(disk, join(dir, name), magic);
  };
  const cases: [string, (bytes: Uint8Array) => Uint8Array, RegExp][] = [
    ["short.bin", (b) => b.subarray(0, 10), /shorter than its header/],
    ["magic.bin", (b) => (b[0] = 0x00, b), /wrong magic/],
    ["length.bin", (b) => b.subarray(0, b.length - 1), /length mismatch/],
    ["checksum.bin", (b) => (b[b.length - 1] = b[b.length - 1]! ^ 0xff, b), /checksum mismatch/],
  ];
  for (const [name, change, reason] of cases) {
    const error = await damaged(name, change).then(() => null, (e: Error) => e);
    t.ok(error instanceof CorruptRecordError, `${name}: a CorruptRecordError (${error?.name})`);
    t.match(error?.message, new RegExp(`^Cannot read .*${name}: `), `${name}: the message names the file`);
    t.match(error?.message, reason, `${name}: and the damage`);
  }
  await t.rejects(
    readRecordFile(disk, join(dir, "good.bin"), "OTHERREC"),
    /wrong magic/,
    "another magic is refused",
  );
});

t.test("a magic that is not 8 bytes is refused before anything is written", async (t) => {
  const dir = tempDir(t);
  const disk = new NodeDisk();
  await t.rejects(
    writeRecordFile(disk, dir, "record.bin", "SHORT", {}),
    /Cannot use record magic SHORT: it must be 8 bytes/,
  );
  t.notOk(existsSync(join(dir, "record.bin")));
  t.notOk(existsSync(join(dir, "record.bin.tmp")));
});

/** A NodeDisk that counts its stats and the sizes asked of its files. */
class CountingStatDisk extends NodeDisk {
  stats = 0;
  sizes = 0;
  override stat(path: string) {
    this.stats++;
    return super.stat(path);
  }
  override async open(path: string, options?: Parameters<NodeDisk["open"]>[1]) {
    const file = await super.open(path, options);
    const sizeBytes = file.sizeBytes.bind(file);
    file.sizeBytes = () => (this.sizes++, sizeBytes());
    return file;
  }
}

t.test("readSmallFileByOpen: one open and one read for a small file; a large one asks its size; neither stats", async (t) => {
  const dir = tempDir(t);
  const disk = new CountingStatDisk();
  await writeRecordFile(disk, dir, "small.bin", magic, { a: 1 });
  const large = { blob: "x".repeat(10_000), exact: 4096 };
  await writeRecordFile(disk, dir, "large.bin", magic, large);
  // A file of exactly the first read's size takes the second path too: pad until it is 4096 bytes.
  let padBytes = 4096 - 64;
  for (let tries = 0; tries < 64; tries++) {
    await writeRecordFile(disk, dir, "exact.bin", magic, { pad: "y".repeat(padBytes) });
    const size = readFileSync(join(dir, "exact.bin")).length;
    if (size === 4096) break;
    padBytes += 4096 - size;
  }
  t.equal(readFileSync(join(dir, "exact.bin")).length, 4096, "a file of exactly 4096 bytes");
  disk.stats = 0;
  const read = (name: string, max = 1 << 20) => readSmallFileByOpen(disk, join(dir, name), max);
  t.same(await read("small.bin"), readFileSync(join(dir, "small.bin")));
  t.equal(disk.sizes, 0, "a small file: no size asked");
  t.same(await read("large.bin"), readFileSync(join(dir, "large.bin")));
  t.same(await read("exact.bin"), readFileSync(join(dir, "exact.bin")));
  t.equal(disk.sizes, 2, "a file that fills the first read: its size asked, then read whole");
  t.equal(await read("missing.bin"), null);
  t.equal(disk.stats, 0, "no stat, even for a missing file");
  await t.rejects(read("large.bin", 5000), /more than the 5000 a small file may hold/);
});

t.test("NodeDisk reads a small file in one step without opening a DiskFile; records are read so", async (t) => {
  const dir = tempDir(t);
  const disk = new CountingStatDisk();
  await writeRecordFile(disk, dir, "record.bin", magic, { blob: "z".repeat(9000) });
  const opens = { n: 0 };
  const open = disk.open.bind(disk);
  disk.open = (path, options) => (opens.n++, open(path, options));
  t.same(await readRecordFile(disk, join(dir, "record.bin"), magic), { blob: "z".repeat(9000) });
  t.equal(await readRecordFile(disk, join(dir, "none.bin"), magic), null);
  t.equal(opens.n, 0, "no DiskFile opened, for a record or a missing file");
  t.same(await disk.readSmallFile(join(dir, "record.bin"), 1 << 20), readFileSync(join(dir, "record.bin")));
  await t.rejects(
    disk.readSmallFile(join(dir, "record.bin"), 100),
    /more than the 100 a small file may hold/,
  );
  await t.rejects(disk.readSmallFile(dir, 100), /Cannot read/, "a directory is not a file");
});
