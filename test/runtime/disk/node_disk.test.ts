import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Semaphore } from "../../../src/runtime/cooperation/semaphore.ts";
import { offLoopWriteBytesMin, WriteWorker } from "../../../src/runtime/disk/worker/file_workers.ts";
import { WorkerError } from "../../../src/runtime/disk/worker/worker_requests.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

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

t.test("reads wait for a turn: never more in flight than the turns, and every read lands", async (t) => {
  // Proves the bound on reads in flight (each is a thread of Deno's blocking pool, competing with the
  // loop for a core): 12 concurrent reads through one turn run one at a time, in full.
  const dir = tempDir(t, "strata-node-disk-turns-");
  const turns = new Semaphore({ permits: 1, waitersMax: 64, name: "test disk read" });
  const disk = new NodeDisk({ writeWorker: null, directReads: null, readTurns: turns });
  const bytes = new Uint8Array(12 * 4096).map((_, i) => (i * 7) & 0xff);
  writeFileSync(join(dir, "f"), bytes);
  const file = await disk.open(join(dir, "f"), { readOnly: true });
  let inUseMax = 0;
  let waitingMax = 0;
  const sampler = setInterval(() => {
    inUseMax = Math.max(inUseMax, turns.inUse);
    waitingMax = Math.max(waitingMax, turns.waiting);
  }, 0);
  const reads = Array.from({ length: 12 }, async (_, i) => {
    const buffer = new Uint8Array(4096);
    const n = await file.readAt(buffer, i * 4096);
    inUseMax = Math.max(inUseMax, turns.inUse);
    waitingMax = Math.max(waitingMax, turns.waiting);
    return n === 4096 && Buffer.from(buffer).equals(bytes.subarray(i * 4096, (i + 1) * 4096));
  });
  const results = await Promise.all(reads);
  clearInterval(sampler);
  await file.close();
  t.same(results, Array(12).fill(true), "every read returned its own bytes");
  t.equal(inUseMax, 1, "one read in flight at a time");
  t.ok(waitingMax >= 1, `the others waited (saw ${waitingMax} waiting)`);
  t.equal(turns.inUse, 0, "every turn was given back");
});

t.test("with the turns' queue full a read goes at once rather than fail", async (t) => {
  // Proves an overload costs the bound, never a read: the queue holds one, the third read goes.
  const dir = tempDir(t, "strata-node-disk-full-");
  const turns = new Semaphore({ permits: 1, waitersMax: 1, name: "test disk read" });
  const disk = new NodeDisk({ writeWorker: null, directReads: null, readTurns: turns });
  writeFileSync(join(dir, "g"), new Uint8Array(3 * 1024).fill(3));
  const file = await disk.open(join(dir, "g"), { readOnly: true });
  const counts = await Promise.all([0, 1, 2].map((i) => file.readAt(new Uint8Array(1024), i * 1024)));
  await file.close();
  t.same(counts, [1024, 1024, 1024]);
  t.equal(turns.inUse, 0);
});

t.test("a DiskError keeps the error it wraps as its cause: the system's, or a file worker's", async (t) => {
  // Proves nothing of the original is lost to the message alone: its code and its class survive,
  // on the loop and across the write worker's thread.
  const dir = tempDir(t, "strata-node-disk-cause-");
  const disk = new NodeDisk({
    writeWorker: new WriteWorker({ slotBytes: 64 * 1024, slotsMax: 1, waitersMax: 4 }),
  });
  const missing = await disk.open(join(dir, "missing")).catch((e) => e);
  t.ok(missing instanceof DiskError, "a DiskError");
  t.equal(missing.cause?.code, "ENOENT", "the system's error is its cause");
  t.match(missing.message, missing.cause.message, "whose message it repeats");
  const path = join(dir, "gone");
  const file = await disk.createExclusive(path);
  rmSync(path);
  const failed = await file.writeAt(new Uint8Array(offLoopWriteBytesMin), 0).catch((e) => e);
  await file.close();
  t.ok(failed instanceof DiskError && failed.code === "not_found", "a DiskError from the worker");
  t.ok(failed.cause instanceof WorkerError, "the worker's error is its cause");
  t.equal(failed.cause.code, "ENOENT", "with the system's code from the worker's thread");
  t.equal(new DiskError("io", "read", "/x").cause, undefined, "no cause where none was given");
});
