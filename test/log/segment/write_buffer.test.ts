import t from "tap";
import { WriteBuffer } from "../../../src/log/segment/segment.ts";
import { BufferPool } from "../../../src/runtime/memory/buffers.ts";
import type { DiskFile } from "../../../src/runtime/disk/disk.ts";

/** A file that notes its writes (a copy of the bytes and the position). */
function notingFile() {
  const writes: { position: number; bytes: number[] }[] = [];
  const file = {
    writeAt: (data: Uint8Array, position: number) => {
      writes.push({ position, bytes: [...data] });
      return Promise.resolve();
    },
  } as unknown as DiskFile;
  return { file, writes };
}

const fill = (buffer: WriteBuffer, bytes: number[], position: number) => {
  buffer.space(bytes.length, position).set(bytes);
  buffer.filled(bytes.length);
};

t.test("batches share one pooled buffer and one write, and the buffer goes back after it", async (t) => {
  const pool = new BufferPool({ bufferBytes: 16, buffersMax: 1 });
  const buffer = new WriteBuffer();
  buffer.usePool(pool);
  fill(buffer, [1, 2, 3], 100);
  fill(buffer, [4, 5], 103);
  t.equal(pool.lentCount, 1);
  const { file, writes } = notingFile();
  await buffer.flush(() => file);
  t.same(writes, [{ position: 100, bytes: [1, 2, 3, 4, 5] }]);
  t.equal(pool.lentCount, 0, "given back");
  await buffer.flush(() => {
    throw new Error("nothing pending: the file is not even asked for");
  });
});

t.test("a batch that would not fit is the caller's cue to flush first", (t) => {
  const pool = new BufferPool({ bufferBytes: 8, buffersMax: 1 });
  const buffer = new WriteBuffer();
  buffer.usePool(pool);
  t.notOk(buffer.wouldOverflow(100), "nothing pending: any batch starts a buffer");
  fill(buffer, [1, 2, 3, 4, 5], 0);
  t.notOk(buffer.wouldOverflow(3));
  t.ok(buffer.wouldOverflow(4));
  t.end();
});

t.test("a batch larger than a pooled buffer, or with every pooled buffer out, gets a buffer of its own", async (t) => {
  const pool = new BufferPool({ bufferBytes: 4, buffersMax: 1 });
  const big = new WriteBuffer();
  big.usePool(pool);
  fill(big, [1, 2, 3, 4, 5, 6], 0);
  t.equal(pool.lentCount, 0, "the pool lent nothing for the large batch");
  const a = new WriteBuffer();
  const b = new WriteBuffer();
  a.usePool(pool);
  b.usePool(pool);
  fill(a, [1], 0);
  fill(b, [2], 0);
  t.equal(pool.lentCount, 1, "one pooled buffer out; the other writer's batch has its own");
  const { file, writes } = notingFile();
  await a.flush(() => file);
  await b.flush(() => file);
  await big.flush(() => file);
  t.same(writes.map((w) => w.bytes), [[1], [2], [1, 2, 3, 4, 5, 6]]);
  t.equal(pool.lentCount, 0);
});

t.test("pending bytes must end where the segment does; the pool is not changed under a pending write", (t) => {
  const buffer = new WriteBuffer();
  fill(buffer, [1, 2], 10);
  t.throws(() => buffer.space(1, 20), /pending bytes must end where the segment does/);
  t.throws(() => buffer.usePool(new BufferPool({ bufferBytes: 4, buffersMax: 1 })), /write pending/);
  t.end();
});

t.test("a failed write still gives the buffer back", async (t) => {
  const pool = new BufferPool({ bufferBytes: 16, buffersMax: 1 });
  const buffer = new WriteBuffer();
  buffer.usePool(pool);
  fill(buffer, [1], 0);
  const failing = { writeAt: () => Promise.reject(new Error("EIO")) } as unknown as DiskFile;
  await t.rejects(buffer.flush(() => failing), /EIO/);
  t.equal(pool.lentCount, 0);
});
