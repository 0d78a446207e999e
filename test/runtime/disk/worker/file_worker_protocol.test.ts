import t from "tap";
import { directIoAlignBytes } from "../../../../src/runtime/disk/disk.ts";
import { errorCode, failureOf, SlotViews } from "../../../../src/runtime/disk/worker/file_worker_protocol.ts";

t.test("a thrown error crosses as its code and message, whatever was thrown", (t) => {
  // Proves a failure answer is always plain data a message can carry.
  const coded = Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
  t.same(failureOf(coded), { code: "ENOSPC", message: "ENOSPC: no space left on device" });
  t.same(failureOf(new Error("plain")), { code: undefined, message: "plain" });
  t.same(failureOf(Object.assign(new Error("numeric"), { code: 5 })), {
    code: undefined,
    message: "numeric",
  });
  t.same(failureOf("a string"), { code: undefined, message: "undefined" });
  t.same(failureOf(null), { code: undefined, message: "undefined" });
  t.equal(errorCode(coded), "ENOSPC");
  t.equal(errorCode(undefined), undefined);
  t.end();
});

t.test("slot views start a stride apart, span a whole stride, and are made once", (t) => {
  // Proves the worker finds slot i where the loop put it: at i × strideBytes of the shared memory.
  const strideBytes = 2 * directIoAlignBytes;
  const memory = new SharedArrayBuffer(3 * strideBytes);
  const views = new SlotViews({ memory, strideBytes });
  new Uint8Array(memory, 2 * strideBytes, 4).set([1, 2, 3, 4]);
  const slot = views.slot(2);
  t.equal(slot.byteOffset, 2 * strideBytes);
  t.equal(slot.length, strideBytes);
  t.same([...slot.subarray(0, 4)], [1, 2, 3, 4]);
  t.equal(views.slot(2), slot, "the same view every time");
  t.end();
});
