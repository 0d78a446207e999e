import t from "tap";
import type { DiskFile } from "../../../src/runtime/disk/disk.ts";
import { readUpTo, readUpToInto } from "../../../src/runtime/disk/file_ops.ts";

/** A file held in memory whose reads return at most `readBytesMax` bytes each, counting them. */
function shortReadFile(contents: Uint8Array, readBytesMax: number): DiskFile & { reads: number } {
  const file = {
    path: "/short-reads",
    reads: 0,
    readAt(buffer: Uint8Array, position: number): Promise<number> {
      file.reads++;
      const bytes = contents.subarray(position, position + Math.min(buffer.length, readBytesMax));
      buffer.set(bytes);
      return Promise.resolve(bytes.length);
    },
    writeAt: () => Promise.reject(new Error("Cannot write: read-only")),
    append: () => Promise.reject(new Error("Cannot append: read-only")),
    sizeBytes: () => Promise.resolve(contents.length),
    truncate: () => Promise.reject(new Error("Cannot truncate: read-only")),
    sync: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return file;
}

const contents = Uint8Array.from({ length: 100 }, (_, i) => i);

t.test("short reads are read again until the bytes asked for are there", async (t) => {
  const file = shortReadFile(contents, 7);
  t.same(await readUpTo(file, 10, 30), contents.subarray(10, 40));
  t.equal(file.reads, 5, "30 bytes in reads of at most 7: five reads");
});

t.test("at the end of the file fewer bytes come back, and an empty read ends the loop", async (t) => {
  const file = shortReadFile(contents, 16);
  t.same(await readUpTo(file, 90, 30), contents.subarray(90), "the 10 bytes the file has");
  t.equal(file.reads, 2, "one read of 10 bytes, one of none");
  t.same(await readUpTo(file, 200, 8), new Uint8Array(0), "nothing past the end");
});

t.test("readUpToInto fills the buffer it is given and says how many bytes it holds", async (t) => {
  const file = shortReadFile(contents, 3);
  const buffer = new Uint8Array(10).fill(0xff);
  t.equal(await readUpToInto(file, buffer, 0), 10);
  t.same(buffer, contents.subarray(0, 10));
  const tail = new Uint8Array(10).fill(0xff);
  t.equal(await readUpToInto(file, tail, 95), 5);
  t.same(tail.subarray(0, 5), contents.subarray(95), "the bytes read are at the buffer's start");
  t.same(tail.subarray(5), new Uint8Array(5).fill(0xff), "the rest is left as it was");
  t.equal(await readUpToInto(file, new Uint8Array(0), 0), 0, "an empty buffer reads nothing");
});
