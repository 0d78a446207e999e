import t from "tap";
import { DiskError, type DiskFile, type OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { SimDisk } from "../../../src/sim/sim_disk.ts";
import { ChunkFileHandles, openChunkFilesMax } from "../../../src/tier/cache/chunk_files.ts";
import { realTime, waitFor } from "../../helpers/wait_for.ts";

// The open chunk files behind polls' window reads: one open per chunk while it is cached, closed
// when it leaves the cache or the bound pushes it out, never while a read uses it.

/** The waits of these tests: a few turns of the loop between checks, for at most 5 s of real time. */
const briefly = { deadlineMs: 5000, pace: realTime(0) };

/** A simulated disk that counts opens and closes. */
class CountingSimDisk extends SimDisk {
  opens = 0;
  closes = 0;

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    const file = await super.open(path, options);
    this.opens++;
    const close = file.close.bind(file);
    file.close = () => {
      this.closes++;
      return close();
    };
    return file;
  }
}

async function diskWith(paths: string[]): Promise<CountingSimDisk> {
  const disk = new CountingSimDisk(new Rng(1));
  await disk.mkdirp("/cache");
  for (const path of paths) {
    const file = await disk.open(path, { create: true });
    await file.writeAt(new TextEncoder().encode(path), 0);
    await file.close();
  }
  disk.opens = 0;
  disk.closes = 0;
  return disk;
}

const firstByte = async (file: DiskFile) => {
  const buffer = new Uint8Array(1);
  await file.readAt(buffer, 0);
  return buffer[0];
};

t.test("reads of one chunk share one open; forgetting the chunk closes it, and the next read opens anew", async (t) => {
  const disk = await diskWith(["/cache/a"]);
  const handles = new ChunkFileHandles(disk);
  for (let i = 0; i < 5; i++) t.equal(await handles.read("/cache/a", firstByte), "/".charCodeAt(0));
  t.equal(disk.opens, 1, "five reads, one open");
  t.equal(disk.closes, 0, "kept open while cached");
  handles.forget("/cache/a");
  await waitFor("the forgotten chunk's handle to close", () => disk.closes > 0, briefly);
  t.equal(disk.closes, 1, "closed when forgotten");
  t.equal(handles.openCount, 0);
  await handles.read("/cache/a", firstByte);
  t.equal(disk.opens, 2, "opened again after");
});

t.test("a chunk forgotten during a read closes only after that read ends, and the read gets its bytes", async (t) => {
  const disk = await diskWith(["/cache/a"]);
  const handles = new ChunkFileHandles(disk);
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const reading = handles.read("/cache/a", async (file) => {
    await held;
    return await firstByte(file);
  });
  await new Promise((r) => setImmediate(r));
  handles.forget("/cache/a");
  await new Promise((r) => setImmediate(r));
  t.equal(disk.closes, 0, "not closed under a reader");
  release();
  t.equal(await reading, "/".charCodeAt(0), "the read completes on its handle");
  t.equal(disk.closes, 1, "closed once the reader is done");
});

t.test("past the bound the least recently used idle handle closes; with every handle in use a read opens its own", async (t) => {
  const paths = Array.from({ length: openChunkFilesMax + 2 }, (_, i) => `/cache/c${i}`);
  const disk = await diskWith(paths);
  const handles = new ChunkFileHandles(disk);
  for (const path of paths.slice(0, openChunkFilesMax)) await handles.read(path, firstByte);
  t.equal(handles.openCount, openChunkFilesMax, "all kept up to the bound");
  await handles.read(paths[0]!, firstByte); // c0 becomes the most recently used
  await handles.read(paths[openChunkFilesMax]!, firstByte);
  t.equal(handles.openCount, openChunkFilesMax, "never more than the bound");
  t.equal(disk.closes, 1, "one idle handle closed for the newcomer");
  const opensBefore = disk.opens;
  await handles.read(paths[0]!, firstByte);
  t.equal(disk.opens, opensBefore, "the recently used c0 stayed open");
  await handles.read(paths[1]!, firstByte);
  t.equal(disk.opens, opensBefore + 1, "c1, the least recently used, was the one closed");

  // Hold every cached handle with a reader, then read one more chunk.
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const cached = [...paths.slice(0, 2), ...paths.slice(3, openChunkFilesMax + 1)];
  const readers = cached.map((path) => handles.read(path, async (file) => (await held, firstByte(file))));
  await new Promise((r) => setImmediate(r));
  const closesBefore = disk.closes;
  t.equal(
    await handles.read(paths[openChunkFilesMax + 1]!, firstByte),
    "/".charCodeAt(0),
    "the extra read is served",
  );
  t.equal(disk.closes, closesBefore + 1, "on a handle of its own, closed after it");
  t.equal(handles.openCount, openChunkFilesMax, "and the cached handles are untouched");
  release();
  await Promise.all(readers);
});

t.test("a failed open fails its read and is not cached: the next read opens again", async (t) => {
  const disk = await diskWith([]);
  const handles = new ChunkFileHandles(disk);
  const error = await handles.read("/cache/late", firstByte).catch((e) => e);
  t.ok(error instanceof DiskError && error.code === "not_found", `${error}`);
  t.equal(handles.openCount, 0, "nothing cached");
  const file = await disk.open("/cache/late", { create: true });
  await file.writeAt(new Uint8Array([7]), 0);
  await file.close();
  t.equal(await handles.read("/cache/late", firstByte), 7, "the file that appeared since is read");
});

t.test("closeAll closes idle handles at once and busy ones after their readers", async (t) => {
  const disk = await diskWith(["/cache/a", "/cache/b"]);
  const handles = new ChunkFileHandles(disk);
  await handles.read("/cache/a", firstByte);
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const busy = handles.read("/cache/b", async (file) => (await held, firstByte(file)));
  await new Promise((r) => setImmediate(r));
  handles.closeAll();
  await waitFor("the idle handle to close", () => disk.closes > 0, briefly);
  t.equal(disk.closes, 1, "the idle one closed");
  release();
  await busy;
  t.equal(disk.closes, 2, "the busy one after its read");
  t.equal(handles.openCount, 0);
});
