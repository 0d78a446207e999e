import { renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { directIoAlignBytes } from "../../../../src/runtime/disk/disk.ts";
import { NodeDisk, offLoopReadBytesMin } from "../../../../src/runtime/disk/node_disk.ts";
import { ReadWorker, readWorkerHeapLimits } from "../../../../src/runtime/disk/worker/file_workers.ts";
import { Semaphore } from "../../../../src/runtime/cooperation/semaphore.ts";
import { takesDirectIo } from "../../../helpers/direct_io.ts";
import { patterned } from "../../../helpers/object_store_contract.ts";
import { tempDir as tempDirWith } from "../../../helpers/temp_dir.ts";

const tempDir = (t: Test) => tempDirWith(t, "strata-read-worker-");

const slotBytes = 128 * 1024;
const smallWorker = () => new ReadWorker({ slotBytes, slotsMax: 2, waitersMax: 64 });
/** A disk whose reads take no turns of the process's shared semaphore, so tests do not share one. */
const diskWith = (readWorker: ReadWorker | null) =>
  new NodeDisk({ writeWorker: null, readWorker, readTurns: null });

t.test("reads of a piece's size go through the worker; smaller and larger ones through the handle", async (t) => {
  // Proves the routing (the worker holds a file open until close once it has read it): a piece's
  // size goes to the worker, smaller and larger reads stay with the handle, all with the file's
  // bytes, and a read past the end is short by exactly what the file lacks.
  const dir = tempDir(t);
  const content = patterned(3 * 64 * 1024 + 4321, 7);
  writeFileSync(join(dir, "a"), content);
  const worker = smallWorker();
  const file = await diskWith(worker).open(join(dir, "a"), { readOnly: true });
  const small = new Uint8Array(100);
  t.equal(await file.readAt(small, 5), 100);
  t.same([...small], [...content.subarray(5, 105)], "the small read's bytes");
  t.equal(worker.openFiles, 0, "a read under offLoopReadBytesMin does not reach the worker");
  const huge = new Uint8Array(slotBytes + 999);
  t.equal(await file.readAt(huge, 1234), huge.length);
  t.ok(Buffer.from(huge).equals(content.subarray(1234, 1234 + huge.length)), "the read over a slot's bytes");
  t.equal(worker.openFiles, 0, "a read over one slot does not reach the worker either");
  const piece = new Uint8Array(64 * 1024);
  t.equal(await file.readAt(piece, 777), piece.length);
  t.ok(Buffer.from(piece).equals(content.subarray(777, 777 + piece.length)), "the piece's bytes");
  t.equal(worker.openFiles, 1, "the worker holds the file open after a piece's read");
  const pastEnd = new Uint8Array(offLoopReadBytesMin);
  const at = content.length - 1000;
  t.equal(await file.readAt(pastEnd, at), 1000, "a read past the end returns what the file has");
  t.ok(Buffer.from(pastEnd.subarray(0, 1000)).equals(content.subarray(at)), "and its bytes");
  t.equal(await file.readAt(pastEnd, content.length + 5), 0, "a read wholly past the end returns 0");
  t.equal(worker.inFlight, 0, "nothing is owed once the reads resolved");
  await file.close();
  t.equal(worker.openFiles, 0, "closing the file closes the worker's descriptor");
});

t.test("reads from many files at once share the slots, all return their bytes, and never exceed them", async (t) => {
  // Proves the bound: more concurrent readers than slots wait their turn, and every one finishes.
  const dir = tempDir(t);
  const worker = smallWorker();
  const disk = diskWith(worker);
  const contents = Array.from({ length: 6 }, (_, i) => patterned(slotBytes, i));
  contents.forEach((bytes, i) => writeFileSync(join(dir, `f${i}`), bytes));
  const files = await Promise.all(contents.map((_, i) => disk.open(join(dir, `f${i}`), { readOnly: true })));
  let inFlightMax = 0;
  const sampler = setInterval(() => inFlightMax = Math.max(inFlightMax, worker.inFlight), 0);
  const buffers = contents.map((bytes) => new Uint8Array(bytes.length));
  await Promise.all(files.map((file, i) => file.readAt(buffers[i]!, 0)));
  clearInterval(sampler);
  await Promise.all(files.map((file) => file.close()));
  t.ok(inFlightMax >= 1, "the sampler saw reads in flight");
  t.ok(inFlightMax <= 2, `at most 2 reads in flight (saw ${inFlightMax})`);
  buffers.forEach((bytes, i) => t.ok(Buffer.from(bytes).equals(contents[i]!), `file ${i} read intact`));
});

t.test("a file replaced or removed under its path since it was opened is still read, through the handle", async (t) => {
  // Proves the inode check and the fallback: the worker opens by path, so without them a replaced
  // file would be read from the new file at the path, and a removed one would fail, where a read
  // through the opened handle returns the opened file's bytes in both cases.
  const dir = tempDir(t);
  const worker = smallWorker();
  const disk = diskWith(worker);
  const old = patterned(offLoopReadBytesMin * 2, 3);
  writeFileSync(join(dir, "moved"), old);
  writeFileSync(join(dir, "removed"), old);
  const moved = await disk.open(join(dir, "moved"), { readOnly: true });
  const removed = await disk.open(join(dir, "removed"), { readOnly: true });
  renameSync(join(dir, "moved"), join(dir, "elsewhere"));
  writeFileSync(join(dir, "moved"), patterned(old.length, 99));
  rmSync(join(dir, "removed"));
  for (const [name, file] of [["replaced", moved], ["removed", removed]] as const) {
    // Two first reads at once: the second reaches the worker before the first's answer, and must
    // be answered as stale too.
    const buffers = [new Uint8Array(old.length), new Uint8Array(old.length)];
    const counts = await Promise.all(buffers.map((buffer) => file.readAt(buffer, 0)));
    t.same(counts, [old.length, old.length]);
    for (const buffer of buffers) t.ok(Buffer.from(buffer).equals(old), `the ${name} file's own bytes`);
    t.equal(await file.readAt(buffers[0]!, 0), old.length, `a later read of the ${name} file`);
    await file.close();
  }
  t.equal(worker.openFiles, 0, "the worker holds neither");
});

t.test("a read the system refuses is a DiskError with its code", async (t) => {
  // Proves errors cross the thread: a directory opens for reading, and its read fails (EISDIR).
  const dir = tempDir(t);
  const file = await diskWith(smallWorker()).open(dir, { readOnly: true });
  await t.rejects(file.readAt(new Uint8Array(offLoopReadBytesMin), 0), {
    name: "DiskError",
    code: "io",
    message: /^Cannot read .*EISDIR/,
  });
  await file.close();
});

t.test("bypassCache files are read around the page cache, any position and length, bytes intact", async (t) => {
  // Proves the widening: a direct read starts and ends on the alignment, and the part asked for is
  // taken from inside the slot. Where O_DIRECT is refused, nothing is counted and the bytes match.
  const dir = tempDir(t);
  const content = patterned(4 * 64 * 1024 + 777, 11);
  writeFileSync(join(dir, "direct"), content);
  const worker = smallWorker();
  const file = await diskWith(worker).open(join(dir, "direct"), { readOnly: true, bypassCache: true });
  const cases = [
    { position: 0, length: 64 * 1024 },
    { position: 123, length: offLoopReadBytesMin + 5 },
    { position: directIoAlignBytes - 1, length: slotBytes },
    { position: content.length - 70_000, length: 80_000 },
  ];
  let expected = 0;
  for (const { position, length } of cases) {
    const buffer = new Uint8Array(length);
    const read = await file.readAt(buffer, position);
    const want = Math.min(length, content.length - position);
    t.equal(read, want, `${read} bytes at ${position}`);
    t.ok(Buffer.from(buffer.subarray(0, read)).equals(content.subarray(position, position + want)), "intact");
    expected += want;
  }
  await file.close();
  t.equal(worker.directBytes, takesDirectIo(dir) ? expected : 0, "the reads went direct where they can");
});

t.test("without bypassCache nothing is read around the page cache; readWorker: null reads on the loop", async (t) => {
  // Proves the hint is opt-in, and that the opt-out still reads correctly.
  const dir = tempDir(t);
  const content = patterned(offLoopReadBytesMin * 3, 5);
  writeFileSync(join(dir, "cached"), content);
  const worker = smallWorker();
  for (const disk of [diskWith(worker), diskWith(null)]) {
    const file = await disk.open(join(dir, "cached"), { readOnly: true });
    const buffer = new Uint8Array(content.length);
    t.equal(await file.readAt(buffer, 0), content.length);
    t.ok(Buffer.from(buffer).equals(content));
    await file.close();
  }
  t.equal(worker.directBytes, 0);
});

t.test("with the worker's queue full a read goes through the handle, and every read returns its bytes", async (t) => {
  // Proves an overload costs the pool's lock, never a read: one slot, no queue, three reads at once.
  const dir = tempDir(t);
  const content = patterned(3 * offLoopReadBytesMin, 13);
  writeFileSync(join(dir, "busy"), content);
  const worker = new ReadWorker({ slotBytes: offLoopReadBytesMin, slotsMax: 1, waitersMax: 0 });
  const file = await diskWith(worker).open(join(dir, "busy"), { readOnly: true });
  const buffers = [0, 1, 2].map(() => new Uint8Array(offLoopReadBytesMin));
  const counts = await Promise.all(buffers.map((buffer, i) => file.readAt(buffer, i * offLoopReadBytesMin)));
  t.same(counts, [offLoopReadBytesMin, offLoopReadBytesMin, offLoopReadBytesMin]);
  buffers.forEach((buffer, i) => {
    const want = content.subarray(i * offLoopReadBytesMin, (i + 1) * offLoopReadBytesMin);
    t.ok(Buffer.from(buffer).equals(want), `read ${i} intact`);
  });
  t.equal(worker.openFiles, 1, "the first read went to the worker");
  await file.close();
});

t.test("reads wait for the process's read turns, as they did on the loop", async (t) => {
  // Proves the worker sits below the turns: with one turn held, a large read waits for it.
  const dir = tempDir(t);
  writeFileSync(join(dir, "turns"), patterned(offLoopReadBytesMin, 1));
  const turns = new Semaphore({ permits: 1, waitersMax: 4, name: "test read" });
  const disk = new NodeDisk({ writeWorker: null, readWorker: smallWorker(), readTurns: turns });
  const file = await disk.open(join(dir, "turns"), { readOnly: true });
  const held = await turns.acquire();
  let done = false;
  const reading = file.readAt(new Uint8Array(offLoopReadBytesMin), 0).then(() => done = true);
  t.equal(turns.waiting, 1, "the read waits for a turn while the only one is held");
  t.equal(done, false, "and has not ended");
  held.release();
  await reading;
  t.equal(done, true, "the released turn lets it end");
  t.equal(turns.inUse, 0, "and it gave its turn back");
  await file.close();
});

t.test("the worker's heap is bounded unless the process preloads modules into every thread", (t) => {
  // Proves the rule: Deno, which runs the server, preloads nothing, so its worker is bounded; a
  // preload such as a TypeScript loader would hold more than the bound sized for the program.
  const bounded = { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 10 };
  t.same(readWorkerHeapLimits([]), bounded);
  t.same(readWorkerHeapLimits(["--enable-source-maps", "--no-warnings"]), bounded);
  for (
    const preload of [["--import=file:///x.mjs"], ["--import", "x"], ["-r", "x"], ["--require=x"], [
      "--loader=x",
    ]]
  ) {
    t.equal(readWorkerHeapLimits(preload), undefined, preload.join(" "));
  }
  t.end();
});
