import { rmSync, writeFileSync } from "node:fs";
import * as fs from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { directReadBytesMin, DirectReads } from "../../../src/runtime/disk/direct_reads.ts";
import { directIoAlignBytes } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { takesDirectIo } from "../../helpers/direct_io.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

function patterned(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 13 + seed) & 0xff;
  return bytes;
}

const align = directIoAlignBytes;

t.test("direct reads at any position and length return exactly the file's bytes, short only at the end", async (t) => {
  // Proves the widening to aligned bounds: every window, aligned or not, spanning several passes of
  // the bounce buffer or ending past the end of the file, reads what a plain read would.
  const dir = tempDir(t, "strata-direct-reads-");
  const path = join(dir, "f");
  const bytes = patterned(5 * align + 123, 1);
  writeFileSync(path, bytes);
  const reads = new DirectReads({ bounceBytes: 2 * align, buffersMax: 1 });
  const inode = Number((await fs.stat(path)).ino);
  const handle = await reads.open(path, inode);
  if (!takesDirectIo(dir)) {
    // The NodeDisk tests below cover the buffered reads the caller then does.
    t.equal(handle, null, `${dir} refuses O_DIRECT: no handle, and the caller reads buffered`);
    return;
  }
  t.ok(handle !== null, "the file system takes O_DIRECT");
  const windows: Array<[number, number]> = [[0, align], [1, 10], [align - 1, 3 * align + 7], [
    100,
    bytes.length,
  ], [
    4 * align,
    10 * align,
  ], [bytes.length, 10]];
  for (const [position, length] of windows) {
    const buffer = new Uint8Array(length);
    const read = await reads.read(handle!, buffer, position);
    const expected = bytes.subarray(position, position + length);
    t.equal(read, expected.length, `read ${length} at ${position}`);
    t.ok(Buffer.from(expected).equals(buffer.subarray(0, read!)), `bytes at ${position} are the file's`);
  }
  t.equal(reads.freeCount, 1, "the bounce buffer came back after every read");
  await handle!.close();
});

t.test("with every bounce buffer lent, a read answers null and the caller reads buffered", async (t) => {
  // Proves the bound: the buffers are few, and a read that finds none out does not wait or allocate.
  const dir = tempDir(t, "strata-direct-reads-");
  const path = join(dir, "g");
  writeFileSync(path, patterned(8 * align, 2));
  const reads = new DirectReads({ bounceBytes: 2 * align, buffersMax: 1 });
  const opened = await reads.open(path, Number((await fs.stat(path)).ino));
  if (!takesDirectIo(dir)) {
    t.equal(opened, null, `${dir} refuses O_DIRECT: no handle, so no bounce buffer is ever lent`);
    return;
  }
  const handle = opened!;
  const first = reads.read(handle, new Uint8Array(6 * align), 0);
  t.equal(await reads.read(handle, new Uint8Array(align), 0), null, "no buffer free: null");
  t.equal(await first, 6 * align);
  await handle.close();
});

t.test("a path that no longer names the opened inode is not opened for direct reads", async (t) => {
  // Proves reads cannot switch files: the direct handle is opened by path, after the caller's.
  const dir = tempDir(t, "strata-direct-reads-");
  const path = join(dir, "h");
  writeFileSync(path, "x");
  const reads = new DirectReads({ bounceBytes: 2 * align, buffersMax: 1 });
  const inode = Number((await fs.stat(path)).ino);
  t.equal(await reads.open(path, inode + 1), null);
});

t.test("NodeDisk reads large windows of bypassCache files directly, small ones and other files buffered", async (t) => {
  // Proves the routing and that both ways read the same bytes, including a file replaced under
  // its path after it was opened (the buffered handle keeps the old file; so must the direct one).
  const dir = tempDir(t, "strata-direct-reads-");
  const reads = new DirectReads({ bounceBytes: 1024 * 1024 + align, buffersMax: 2 });
  const disk = new NodeDisk({ writeWorker: null, readWorker: null, directReads: reads });
  const bytes = patterned(3 * directReadBytesMin + 5, 3);
  writeFileSync(join(dir, "a"), bytes);
  writeFileSync(join(dir, "b"), bytes);
  const direct = await disk.open(join(dir, "a"), { readOnly: true, bypassCache: true });
  const cached = await disk.open(join(dir, "b"), { readOnly: true });
  const large = new Uint8Array(2 * directReadBytesMin);
  t.equal(await direct.readAt(large, 17), large.length);
  t.ok(Buffer.from(bytes.subarray(17, 17 + large.length)).equals(large), "the direct read's bytes");
  const small = new Uint8Array(100);
  t.equal(await direct.readAt(small, 3), 100);
  t.ok(Buffer.from(bytes.subarray(3, 103)).equals(small), "the small read's bytes");
  t.equal(await cached.readAt(large, 17), large.length);
  const expectedDirect = takesDirectIo(dir) ? large.length : 0;
  t.equal(reads.bytesRead, expectedDirect, "only the large read of the bypassCache file went direct");
  await direct.close();
  await cached.close();

  const replacedPath = join(dir, "c");
  writeFileSync(replacedPath, bytes);
  const replaced = await disk.open(replacedPath, { readOnly: true, bypassCache: true });
  rmSync(replacedPath);
  writeFileSync(replacedPath, patterned(bytes.length, 99));
  t.equal(await replaced.readAt(large, 0), large.length);
  t.ok(
    Buffer.from(bytes.subarray(0, large.length)).equals(large),
    "the opened file's bytes, not the new one's",
  );
  await replaced.close();
});

t.test("a file deleted after it was opened is still read, buffered", async (t) => {
  // Proves the direct handle is only a faster way: when it cannot be opened (the path is gone), the
  // read goes through the handle the caller has, which still holds the file.
  const dir = tempDir(t, "strata-direct-reads-");
  const reads = new DirectReads({ bounceBytes: 1024 * 1024 + align, buffersMax: 1 });
  const disk = new NodeDisk({ writeWorker: null, readWorker: null, directReads: reads });
  const path = join(dir, "deleted");
  const bytes = patterned(2 * directReadBytesMin, 5);
  writeFileSync(path, bytes);
  const file = await disk.open(path, { readOnly: true, bypassCache: true });
  rmSync(path);
  const buffer = new Uint8Array(bytes.length);
  t.equal(await file.readAt(buffer, 0), bytes.length);
  t.ok(Buffer.from(bytes).equals(buffer), "the deleted file's bytes");
  t.equal(reads.bytesRead, 0, "none through a direct handle");
  await file.close();
});
