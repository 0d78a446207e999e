import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { directIoAlignBytes } from "../../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../../src/runtime/disk/node_disk.ts";
import { offLoopWriteBytesMin, WriteWorker } from "../../../../src/runtime/disk/worker/file_workers.ts";
import { takesDirectIo } from "../../../helpers/direct_io.ts";

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), "strata-write-worker-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function patterned(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
}

const smallWorker = () => new WriteWorker({ slotBytes: 64 * 1024, slotsMax: 2, waitersMax: 64 });

t.test("large writes go through the worker and land where asked; small ones stay on the loop", async (t) => {
  // Proves the worker path is the one taken (it holds the file open until close) and that a write
  // bigger than a slot is split without losing or moving a byte.
  const dir = tempDir(t);
  const worker = smallWorker();
  const disk = new NodeDisk({ writeWorker: worker });
  const path = join(dir, "a");
  const file = await disk.createExclusive(path);
  await file.writeAt(new Uint8Array([1, 2, 3]), 0);
  t.equal(worker.openFiles, 0, "a write under offLoopWriteBytesMin does not reach the worker");
  const big = patterned(3 * 64 * 1024 + 17, 5);
  await file.writeAt(big, 3);
  t.equal(worker.openFiles, 1, "the worker holds the file open after a large write");
  t.equal(worker.inFlight, 0, "nothing is owed once the write resolved");
  await file.close();
  t.equal(worker.openFiles, 0, "closing the file closes the worker's descriptor");
  const onDisk = readFileSync(path);
  t.equal(onDisk.length, 3 + big.length);
  t.same([...onDisk.subarray(0, 3)], [1, 2, 3]);
  t.ok(Buffer.from(big).equals(onDisk.subarray(3)), "the large write's bytes are on disk at its position");
});

t.test("writes from many files at once share the slots, all land, and never exceed them", async (t) => {
  // Proves the bound: more concurrent writers than slots wait their turn, and every one finishes.
  const dir = tempDir(t);
  const worker = smallWorker();
  const disk = new NodeDisk({ writeWorker: worker });
  const files = await Promise.all(
    Array.from({ length: 6 }, (_, i) => disk.createExclusive(join(dir, `f${i}`))),
  );
  let inFlightMax = 0;
  const sampler = setInterval(() => inFlightMax = Math.max(inFlightMax, worker.inFlight), 0);
  await Promise.all(files.map((file, i) => file.writeAt(patterned(256 * 1024, i), 0)));
  clearInterval(sampler);
  await Promise.all(files.map((file) => file.close()));
  t.ok(inFlightMax >= 1, "the sampler saw writes in flight");
  t.ok(inFlightMax <= worker.slotsMax, `at most ${worker.slotsMax} writes in flight (saw ${inFlightMax})`);
  for (let i = 0; i < files.length; i++) {
    t.ok(
      Buffer.from(patterned(256 * 1024, i)).equals(readFileSync(join(dir, `f${i}`))),
      `file ${i} is intact`,
    );
  }
});

t.test("a file replaced under its path since it was opened is refused, not written", async (t) => {
  // Proves the inode check: the worker opens by path, so without it this write would land in the
  // new file and the opened one would silently miss it.
  const dir = tempDir(t);
  const disk = new NodeDisk({ writeWorker: smallWorker() });
  const path = join(dir, "moved");
  const file = await disk.createExclusive(path);
  renameSync(path, join(dir, "elsewhere"));
  writeFileSync(path, "another file");
  await t.rejects(
    file.writeAt(patterned(offLoopWriteBytesMin, 1), 0),
    { name: "DiskError", message: /no longer the file that was opened/ },
  );
  await file.close();
  t.equal(readFileSync(path, "utf8"), "another file", "the file now at the path is untouched");
});

t.test("a failed open in the worker is a DiskError with the system's code", async (t) => {
  // Proves errors cross the thread with their code: the path is gone when the worker first opens it.
  const dir = tempDir(t);
  const disk = new NodeDisk({ writeWorker: smallWorker() });
  const path = join(dir, "gone");
  const file = await disk.createExclusive(path);
  rmSync(path);
  await t.rejects(file.writeAt(patterned(offLoopWriteBytesMin, 2), 0), {
    name: "DiskError",
    code: "not_found",
  });
  await file.close();
});

t.test("writeWorker: null keeps every write on the calling thread", async (t) => {
  // Proves the opt-out still writes correctly (the path the simulator-free unit tests may choose).
  const dir = tempDir(t);
  const disk = new NodeDisk({ writeWorker: null });
  const file = await disk.createExclusive(join(dir, "b"));
  const big = patterned(offLoopWriteBytesMin * 2, 9);
  await file.writeAt(big, 0);
  await file.close();
  t.ok(Buffer.from(big).equals(readFileSync(join(dir, "b"))));
});

t.test("bypassCache sends aligned writes around the page cache and the rest through it, bytes intact", async (t) => {
  // Proves the split: the aligned parts go direct (counted by the worker) where the file system
  // allows it, the unaligned tail and unaligned positions are buffered, and what lands on disk is
  // byte-exact either way. Where O_DIRECT is refused, nothing is counted and the bytes still land.
  const dir = tempDir(t);
  const worker = smallWorker();
  const disk = new NodeDisk({ writeWorker: worker });
  const path = join(dir, "direct");
  const file = await disk.createExclusive(path, { bypassCache: true });
  const aligned = patterned(2 * worker.slotBytes, 3);
  // Its second part starts aligned and is two alignments and 100 bytes long: the two go direct.
  const tail = patterned(worker.slotBytes + 2 * directIoAlignBytes + 100, 4);
  const unaligned = patterned(offLoopWriteBytesMin, 6);
  // The unaligned write comes first: had it been tried direct and refused, the file would be
  // written buffered from then on, and the count would show it.
  await file.writeAt(unaligned, aligned.length + tail.length + 1);
  await file.writeAt(aligned, 0);
  await file.writeAt(tail, aligned.length);
  await file.sync();
  await file.close();
  const expectedDirect = takesDirectIo(dir) ? aligned.length + worker.slotBytes + 2 * directIoAlignBytes : 0;
  t.equal(worker.directBytes, expectedDirect, "only the aligned prefixes of aligned slot parts went direct");
  const onDisk = readFileSync(path);
  t.equal(onDisk.length, aligned.length + tail.length + 1 + unaligned.length);
  t.ok(Buffer.from(aligned).equals(onDisk.subarray(0, aligned.length)), "the aligned write is intact");
  t.ok(
    Buffer.from(tail).equals(onDisk.subarray(aligned.length, aligned.length + tail.length)),
    "the write with an unaligned tail is intact",
  );
  t.ok(Buffer.from(unaligned).equals(onDisk.subarray(-unaligned.length)), "the unaligned write is intact");
  t.equal(worker.slotBytes % directIoAlignBytes, 0, "the test's slots are a multiple of the alignment");
});

t.test("without bypassCache nothing goes around the page cache", async (t) => {
  // Proves the hint is opt-in: the log's files, read back soon, stay cached.
  const dir = tempDir(t);
  const worker = smallWorker();
  const disk = new NodeDisk({ writeWorker: worker });
  const file = await disk.createExclusive(join(dir, "cached"));
  await file.writeAt(patterned(2 * worker.slotBytes, 8), 0);
  await file.close();
  t.equal(worker.directBytes, 0);
});
