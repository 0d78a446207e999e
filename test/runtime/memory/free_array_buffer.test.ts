import t from "tap";
import { freeArrayBuffer } from "../../../src/runtime/memory/buffers.ts";

const hasTransfer = typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer === "function";

t.test("where the runtime can transfer, the buffer is detached at once; elsewhere it is left whole", (t) => {
  const buffer = new ArrayBuffer(1024 * 1024);
  const view = new Uint8Array(buffer).fill(1);
  const freed = freeArrayBuffer(buffer);
  t.equal(freed, hasTransfer, hasTransfer ? "freed" : "not freed: this runtime has no transfer");
  t.equal(buffer.byteLength, hasTransfer ? 0 : 1024 * 1024);
  t.equal(view.length, hasTransfer ? 0 : 1024 * 1024, "a view reads as empty once its buffer is freed");
  t.equal(freeArrayBuffer(buffer), false, "a second free does nothing");
  t.end();
});

t.test("a buffer already detached is left alone", (t) => {
  const buffer = new ArrayBuffer(16);
  structuredClone(buffer, { transfer: [buffer] });
  t.equal(buffer.byteLength, 0, "detached by the transfer to a clone");
  t.equal(freeArrayBuffer(buffer), false);
  t.end();
});
