import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { DiskError } from "../../src/runtime/disk.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

t.test("files: create, append, write at a position, read at a position, truncate, sync", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-disk-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const disk = new NodeDisk();
  const file = await disk.open(join(dir, "a.log"), { create: true });
  await file.append(bytes("hello "));
  await file.append(bytes("world"));
  await file.writeAt(bytes("W"), 6);
  await file.sync();
  t.equal(await file.sizeBytes(), 11);
  const buf = new Uint8Array(5);
  t.equal(await file.readAt(buf, 6), 5);
  t.equal(text(buf), "World");
  t.equal(await file.readAt(buf, 11), 0, "reading at the end returns 0 bytes");
  await file.truncate(5);
  t.equal(await file.sizeBytes(), 5);
  await file.close();
  const reopened = await disk.open(join(dir, "a.log"), { create: true });
  t.equal(await reopened.sizeBytes(), 5, "create does not truncate an existing file");
  await reopened.close();
});

t.test("directory operations and typed errors", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-disk-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const disk = new NodeDisk();
  await disk.mkdirp(join(dir, "x/y"));
  const f = await disk.createExclusive(join(dir, "x/y/b"));
  await f.close();
  await t.rejects(disk.createExclusive(join(dir, "x/y/b")), { name: "DiskError", code: "exists" });
  await disk.link(join(dir, "x/y/b"), join(dir, "x/y/c"));
  await t.rejects(disk.link(join(dir, "x/y/b"), join(dir, "x/y/c")), { code: "exists" });
  await disk.rename(join(dir, "x/y/c"), join(dir, "x/y/d"));
  await disk.fsyncDir(join(dir, "x/y"));
  t.same(await disk.list(join(dir, "x/y")), ["b", "d"]);
  await disk.unlink(join(dir, "x/y/b"));
  t.equal(await disk.stat(join(dir, "x/y/b")), null);
  t.equal((await disk.stat(join(dir, "x/y")))?.isDirectory, true);
  const error = await disk.open(join(dir, "missing")).catch((e) => e);
  t.ok(error instanceof DiskError && error.code === "not_found", "opening a missing file is not_found");
  t.match(error.message, /^Cannot open .*missing: not_found/);
  await disk.removeTree(join(dir, "x"));
  await disk.removeTree(join(dir, "x"));
  t.equal(await disk.stat(join(dir, "x")), null, "removed, and removing again is not an error");
});
