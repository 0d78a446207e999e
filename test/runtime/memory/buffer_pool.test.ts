import t from "tap";
import { BufferPool } from "../../../src/runtime/memory/buffers.ts";

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

t.test("takeBounded never has more than buffersMax pooled buffers out, and lends again once one is back", (t) => {
  // Many writers sharing big buffers: past the bound they get null (and use a buffer of their own).
  const pool = new BufferPool({ bufferBytes: 1024, buffersMax: 2 });
  const a = pool.takeBounded(1024)!;
  const b = pool.takeBounded(10)!;
  t.equal(a.buffer.byteLength, 1024);
  t.equal(b.length, 10);
  t.equal(pool.lentCount, 2);
  t.equal(pool.takeBounded(1024), null, "a third is refused");
  t.equal(pool.takeBounded(2048), null, "one larger than a pooled buffer is refused");
  pool.give(a);
  pool.give(a);
  t.equal(pool.lentCount, 1, "a second give of one buffer counts once");
  const c = pool.takeBounded(1024)!;
  t.equal(c.buffer, a.buffer, "the buffer given back is lent again");
  t.equal(pool.lentCount, 2);
  t.end();
});

t.test("a lent buffer moved by a transfer comes back as its new self; one that cannot come back is forgotten", (t) => {
  // A BYOB read detaches the buffer it is given and answers with a new ArrayBuffer over its memory.
  const pool = new BufferPool({ bufferBytes: 1024, buffersMax: 1 });
  const lent = pool.takeBounded(1024)!.buffer as ArrayBuffer;
  const moved: ArrayBuffer = structuredClone(lent, { transfer: [lent] });
  pool.give(new Uint8Array(moved));
  t.equal(pool.lentCount, 1, "a plain give of the moved buffer is not taken: the pool never lent it");
  pool.giveMoved(lent, moved);
  t.equal(pool.lentCount, 0, "giveMoved takes it back in the lent one's place");
  t.equal(pool.takeBounded(1024)!.buffer, moved, "and lends it again");
  pool.giveMoved(new ArrayBuffer(1024), new ArrayBuffer(1024));
  t.equal(pool.lentCount, 1, "a buffer the pool never lent changes nothing");
  const lost = pool.takeBounded(1024);
  t.equal(lost, null, "at the bound");
  pool.forget(moved);
  t.equal(pool.lentCount, 0, "a forgotten buffer no longer counts");
  t.equal(pool.freeCount, 0, "and is not kept");
  pool.forget(moved);
  t.equal(pool.lentCount, 0, "forgetting twice counts once");
  t.ok(pool.takeBounded(1024), "the bound lends a new buffer again");
  t.end();
});
