import t from "tap";
import type { DiskFile } from "../../../src/runtime/disk/disk.ts";
import { FileCacheDisk, OpenFileCache } from "../../../src/runtime/disk/open_files.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { QueueFullError } from "../../../src/runtime/wait_errors.ts";
import { SimDisk } from "../../../src/sim/sim_disk.ts";
import { OpenCountDisk } from "../../helpers/disks/open_count_disk.ts";
import { waitFor } from "../../helpers/wait_for.ts";

/** A simulated disk, counted underneath a file cache of `maxOpenFiles` handles. */
async function cachedDisk(maxOpenFiles: number, seed = 1, waitersMax?: number) {
  const raw = new SimDisk(new Rng(seed));
  await raw.mkdirp("/d");
  const counted = new OpenCountDisk(raw);
  const cache = new OpenFileCache({ maxOpenFiles, ...(waitersMax === undefined ? {} : { waitersMax }) });
  return { raw, counted, cache, disk: new FileCacheDisk(counted, cache) };
}

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

async function textOf(file: DiskFile, lengthBytes: number): Promise<string> {
  const buffer = new Uint8Array(lengthBytes);
  const read = await file.readAt(buffer, 0);
  return new TextDecoder().decode(buffer.subarray(0, read));
}

t.test("ten files written in turns through three handles: never more than three open, nothing lost", async (t) => {
  const { counted, cache, disk } = await cachedDisk(3);
  const files = [];
  for (let i = 0; i < 10; i++) files.push(await disk.createExclusive(`/d/${i}`, { reopenable: true }));
  for (let round = 0; round < 4; round++) {
    // Half the rounds write every file at once, so the cache also serves opens waiting for a handle.
    const writes = files.map((file) => file.writeAt(bytesOf(`${round}`), round));
    if (round % 2 === 0) await Promise.all(writes);
    else for (const write of writes) await write;
  }
  for (const [i, file] of files.entries()) {
    t.equal(await textOf(file, 16), "0123", `file ${i} holds every write`);
  }
  t.ok(counted.openMax <= 3, `at most 3 files were open at once underneath (${counted.openMax})`);
  t.equal(cache.openFiles, counted.openNow, "the gauge counts what is open underneath");
  t.ok(cache.evictionsTotal > 0, "idle handles were closed to make room");
  for (const file of files) await file.close();
  t.equal(counted.openNow, 0, "every handle is closed with its file");
  t.equal(cache.openFiles, 0);
});

t.test("a written file closed for another is synced first: its bytes survive a crash, and its sync needs no reopen", async (t) => {
  for (let seed = 1; seed <= 8; seed++) {
    const { raw, counted, disk } = await cachedDisk(1, seed);
    const a = await disk.createExclusive("/d/a", { reopenable: true });
    await raw.fsyncDir("/d");
    for (let i = 0; i < 4; i++) await a.writeAt(bytesOf(`${i}`), i);
    const b = await disk.createExclusive("/d/b", { reopenable: true });
    await b.writeAt(bytesOf("b"), 0);
    t.equal(counted.syncsByPath.get("/d/a"), 1, `seed ${seed}: a was fsynced when b took its handle`);
    await a.sync();
    t.equal(
      counted.opensByPath.get("/d/a"),
      1,
      `seed ${seed}: a's sync found it durable, without reopening it`,
    );
    raw.crash();
    t.equal(
      new TextDecoder().decode(raw.peek("/d/a")!),
      "0123",
      `seed ${seed}: a's writes survived the crash`,
    );
  }
});

t.test("a file with nothing written since its sync closes without another", async (t) => {
  const { counted, disk } = await cachedDisk(1);
  const a = await disk.createExclusive("/d/a", { reopenable: true });
  await a.writeAt(bytesOf("a"), 0);
  await a.sync();
  await disk.createExclusive("/d/b", { reopenable: true });
  t.equal(counted.syncsByPath.get("/d/a"), 1, "only the owner's sync");
  t.equal(await textOf(a, 4), "a", "a reopens for a read");
  t.equal(counted.opensByPath.get("/d/a"), 2);
});

/** Holds every read of `disk` until the returned function is called. */
function holdReads(disk: OpenCountDisk): () => void {
  let release = () => {};
  disk.readsHeld = new Promise<void>((resolve) => (release = resolve));
  return () => {
    disk.readsHeld = null;
    release();
  };
}

t.test("a handle in use is not closed: the next open waits for it to fall idle", async (t) => {
  const { counted, cache, disk } = await cachedDisk(1);
  const a = await disk.createExclusive("/d/a", { reopenable: true });
  await a.writeAt(bytesOf("x"), 0);
  const release = holdReads(counted);
  const reading = a.readAt(new Uint8Array(1), 0);
  let bOpened = false;
  const opening = disk.createExclusive("/d/b", { reopenable: true }).then((b) => {
    bOpened = true;
    return b;
  });
  await waitFor("b to wait for a handle", () => cache.waiting === 1, { deadlineMs: 5000 });
  t.notOk(bOpened, "b waits while a's read holds the only handle");
  t.equal(cache.waiting, 1);
  t.equal(counted.openNow, 1, "a's handle is still open");
  release();
  t.equal(await reading, 1, "a's read finished on its handle");
  const b = await opening;
  t.ok(bOpened, "b opened once a fell idle");
  t.equal(counted.openMax, 1, "never two open");
  t.equal(counted.syncsByPath.get("/d/a"), 1, "a was synced before its handle went to b");
  await b.close();
  await a.close();
});

t.test("the wait for a handle is bounded: past its waiters, an open fails with QueueFullError", async (t) => {
  const { counted, disk, cache } = await cachedDisk(1, 1, 1);
  const a = await disk.createExclusive("/d/a", { reopenable: true });
  const release = holdReads(counted);
  const reading = a.readAt(new Uint8Array(1), 0);
  const b = disk.createExclusive("/d/b", { reopenable: true });
  await waitFor("b to wait for a handle", () => cache.waiting === 1, { deadlineMs: 5000 });
  t.equal(cache.waiting, 1, "b waits");
  await t.rejects(disk.createExclusive("/d/c", { reopenable: true }), QueueFullError, "c is refused");
  release();
  await reading;
  await (await b).close();
  await a.close();
});

t.test("a failed sync when the cache closes a file is thrown by every later sync", async (t) => {
  const { counted, disk } = await cachedDisk(1);
  const a = await disk.createExclusive("/d/a", { reopenable: true });
  await a.writeAt(bytesOf("a"), 0);
  counted.beforeSync = (path) => {
    if (path === "/d/a") throw new Error("EIO");
  };
  await disk.createExclusive("/d/b", { reopenable: true });
  counted.beforeSync = () => {};
  await t.rejects(a.sync(), /EIO/, "the failure is kept");
  await t.rejects(a.sync(), /EIO/, "and kept: the kernel may have dropped the pages");
});

t.test("files opened without reopenable are the inner disk's, outside the bound", async (t) => {
  const { counted, cache, disk } = await cachedDisk(1);
  const a = await disk.open("/d/a", { create: true });
  const b = await disk.open("/d/b", { create: true });
  t.equal(counted.openNow, 2);
  t.equal(cache.openFiles, 0);
  await a.close();
  await b.close();
});
