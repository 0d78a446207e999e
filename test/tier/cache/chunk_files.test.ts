import t from "tap";
import type { PieceSink } from "../../../src/objectstore/object_store.ts";
import { BufferPool } from "../../../src/runtime/memory/buffers.ts";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { PieceGate } from "../../../src/runtime/cooperation/piece_gate.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { SimDisk } from "../../../src/sim/sim_disk.ts";
import {
  ChunkFiles,
  ChunkFileShortError,
  ChunkObjectShortError,
} from "../../../src/tier/cache/chunk_files.ts";

// A shard's chunk files on a simulated disk with crash semantics: what a fill leaves durable,
// what the walk at open finds, and how windows are read.

const bytesOf = (length: number, seed = 0) => Uint8Array.from({ length }, (_, i) => (i + seed) & 0xff);

/** A source that hands `bytes` over in pieces of `pieceBytes`, as the store streams a range. */
const pieces = (bytes: Uint8Array, pieceBytes: number) => async (write: PieceSink) => {
  for (let at = 0; at < bytes.length; at += pieceBytes) await write(bytes.subarray(at, at + pieceBytes), at);
  return bytes.length;
};

class CountingGate extends PieceGate {
  turns = 0;
  override async turn(): Promise<void> {
    await super.turn();
    this.turns++;
  }
}

t.test("a fill writes its .part piece by piece, fsyncs and renames it: the chunk file survives a crash", async (t) => {
  const disk = new SimDisk(new Rng(1));
  const gate = new CountingGate();
  const files = new ChunkFiles({ disk, dir: "/cache", gate });
  await files.walk(() => false);
  const bytes = bytesOf(10_000);
  t.equal(await files.fill("inc/seg.log_chunks/0", 10_000, pieces(bytes, 4096)), 10_000, "its length");
  t.equal(gate.turns, 3, "each of the three pieces took a turn of the gate");
  t.equal(disk.peek("/cache/inc/seg.log_chunks/0.part"), null, "no .part left");
  disk.crash();
  t.same(disk.peek("/cache/inc/seg.log_chunks/0"), bytes, "durable, byte for byte, after a crash");
});

t.test("a retried stream writes from position 0 again: the file ends where the last attempt did", async (t) => {
  const disk = new SimDisk(new Rng(2));
  const files = new ChunkFiles({ disk, dir: "/cache" });
  const good = bytesOf(3000, 7);
  const retried = async (write: PieceSink) => {
    await write(bytesOf(5000, 1), 0); // a first attempt, cut short after more than the range
    await write(good, 0);
    return good.length;
  };
  await files.fill("k", 3000, retried);
  t.same(disk.peek("/cache/k"), good, "nothing of the first attempt past the end");
});

t.test("a fill that fails leaves no chunk file; its .part is a leftover the walk at open deletes", async (t) => {
  const disk = new SimDisk(new Rng(4));
  const files = new ChunkFiles({ disk, dir: "/cache" });
  const failing = async (write: PieceSink) => {
    await write(bytesOf(100), 0);
    throw new Error("the store went away");
  };
  await t.rejects(files.fill("a/b", 100, failing), /the store went away/);
  t.equal(disk.peek("/cache/a/b"), null, "no chunk file");
  t.not(disk.peek("/cache/a/b.part"), null, "the .part is left");
  await files.fill("a/c", 700, pieces(bytesOf(700), 512));
  const top = await disk.open("/cache/access-table.bin", { create: true });
  await top.close();
  const found = await files.walk((name) => name.startsWith("access-table"));
  t.same([...found], [["a/c", 700]], "the chunk files by key with their sizes; the skipped name left out");
  t.equal(disk.peek("/cache/a/b.part"), null, "the leftover is deleted");
  t.not(disk.peek("/cache/access-table.bin"), null, "the skipped name is left alone");
});

t.test("a window starts at its position in the object, never runs past the chunk, and comes from the pool", async (t) => {
  const disk = new SimDisk(new Rng(5));
  const windowPool = new BufferPool({ bufferBytes: 4096, buffersMax: 2 });
  const files = new ChunkFiles({ disk, dir: "/cache", windowPool });
  const bytes = bytesOf(5000, 3);
  await files.fill("k", 5000, pieces(bytes, 5000));
  const span = { chunk: 1, start: 10_000, end: 15_000 };
  const window = await files.readWindow("k", span, 11_000, 1000);
  t.same(window, bytes.subarray(1000, 2000), "1000 bytes from object byte 11000, file byte 1000");
  t.equal(windowPool.lentCount, 1, "in a pooled buffer");
  files.recycleWindow(window);
  t.equal(windowPool.lentCount, 0, "given back");
  t.same(await files.readWindow("k", span, 14_500, 4000), bytes.subarray(4500), "cut at the chunk's end");
});

t.test("a window larger than the pool's buffers comes from the large pool while it lends fewer than its bound", async (t) => {
  const disk = new SimDisk(new Rng(6));
  const windowPool = new BufferPool({ bufferBytes: 1024, buffersMax: 2 });
  const largeWindowPool = new BufferPool({ bufferBytes: 4096, buffersMax: 1 });
  const files = new ChunkFiles({ disk, dir: "/cache", windowPool, largeWindowPool });
  const bytes = bytesOf(5000, 7);
  await files.fill("k", 5000, pieces(bytes, 5000));
  const span = { chunk: 0, start: 0, end: 5000 };
  const small = await files.readWindow("k", span, 0, 1000);
  const large = await files.readWindow("k", span, 0, 3000);
  const own = await files.readWindow("k", span, 1000, 3000);
  t.same([small, large, own], [bytes.subarray(0, 1000), bytes.subarray(0, 3000), bytes.subarray(1000, 4000)]);
  t.same([windowPool.lentCount, largeWindowPool.lentCount], [1, 1], "one from each pool; the third its own");
  for (const window of [small, large, own]) files.recycleWindow(window);
  t.same([windowPool.lentCount, largeWindowPool.lentCount], [0, 0], "each pool has its own back");
  t.equal(largeWindowPool.freeCount, 1, "and keeps it for the next");
});

t.test("a deleted chunk's file is gone: the next window read fails not_found rather than using a held handle", async (t) => {
  const disk = new SimDisk(new Rng(6));
  const files = new ChunkFiles({ disk, dir: "/cache" });
  await files.fill("k", 100, pieces(bytesOf(100), 100));
  const span = { chunk: 0, start: 0, end: 100 };
  t.equal((await files.readWindow("k", span, 0, 100)).length, 100, "read through a handle kept open");
  await files.delete("k");
  const error = await files.readWindow("k", span, 0, 100).catch((e) => e);
  t.ok(error instanceof DiskError && error.code === "not_found", `${error}`);
});

t.test("a fill given fewer bytes than its chunk spans (a short object) fails and renames nothing into place", async (t) => {
  const disk = new SimDisk(new Rng(7));
  const files = new ChunkFiles({ disk, dir: "/cache" });
  const error = await files.fill("k", 5000, pieces(bytesOf(3000), 1024)).catch((e) => e);
  t.ok(error instanceof ChunkObjectShortError, `${error}`);
  t.match(String(error), /Cannot fill chunk k: the object gave 3000 of its 5000 bytes/);
  t.equal(disk.peek("/cache/k"), null, "no chunk file");
});

t.test("a chunk file truncated on disk fails the window read with ChunkFileShortError, its buffer back in the pool", async (t) => {
  const disk = new SimDisk(new Rng(8));
  const windowPool = new BufferPool({ bufferBytes: 4096, buffersMax: 2 });
  const files = new ChunkFiles({ disk, dir: "/cache", windowPool });
  await files.fill("k", 3000, pieces(bytesOf(3000), 3000));
  const span = { chunk: 0, start: 0, end: 3000 };
  const whole = await files.readWindow("k", span, 0, 3000);
  t.equal(whole.length, 3000, "whole, before the truncation");
  files.recycleWindow(whole);
  const cut = await disk.open("/cache/k");
  await cut.truncate(1200);
  await cut.close();
  const before = await files.readWindow("k", span, 0, 1000);
  t.same(before, bytesOf(1000), "a window before the cut is intact");
  files.recycleWindow(before);
  for (const [from, want] of [[1000, 1000], [2000, 500]] as const) {
    const error = await files.readWindow("k", span, from, want).catch((e) => e);
    t.ok(error instanceof ChunkFileShortError, `${error}`);
  }
  t.match(
    String(await files.readWindow("k", span, 1000, 1000).catch((e) => e)),
    /Cannot read chunk file k at byte 1000: it holds 200 of the 1000 bytes there/,
  );
  t.equal(windowPool.lentCount, 0, "the failed reads gave their buffers back");
});
