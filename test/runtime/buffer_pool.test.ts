import t from "tap";
import { BufferPool } from "../../src/runtime/buffer_pool.ts";

t.test("a buffer given back is lent again; one larger than the pool's size is never pooled", (t) => {
  const pool = new BufferPool({ bufferBytes: 1024, buffersMax: 2 });
  const a = pool.take(100);
  t.equal(a.length, 100, "a view of the length asked for");
  t.equal(a.buffer.byteLength, 1024, "over a pooled buffer");
  pool.give(a);
  t.equal(pool.freeCount, 1);
  const b = pool.take(1024);
  t.equal(b.buffer, a.buffer, "the same buffer again");
  const big = pool.take(4096);
  t.equal(big.length, 4096, "a larger request gets its own buffer");
  pool.give(big);
  t.equal(pool.freeCount, 0, "and it is not kept");
  t.end();
});

t.test("a second give, or a buffer the pool never lent, is ignored: no buffer is ever lent twice at once", (t) => {
  const pool = new BufferPool({ bufferBytes: 1024, buffersMax: 4 });
  const a = pool.take(10);
  pool.give(a);
  pool.give(a);
  t.equal(pool.freeCount, 1, "given back once");
  pool.give(new Uint8Array(1024));
  t.equal(pool.freeCount, 1, "a foreign buffer is not taken");
  const x = pool.take(10);
  const y = pool.take(10);
  t.not(x.buffer, y.buffer, "two loans, two buffers");
  t.end();
});

t.test("the pool keeps at most buffersMax buffers", (t) => {
  const pool = new BufferPool({ bufferBytes: 64, buffersMax: 2 });
  const loans = Array.from({ length: 5 }, () => pool.take(64));
  for (const loan of loans) pool.give(loan);
  t.equal(pool.freeCount, 2);
  t.end();
});
