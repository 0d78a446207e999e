import t from "tap";
import { directIoAlignBytes } from "../../../../src/runtime/disk/disk.ts";
import { ReadHandler, type ReadRequest } from "../../../../src/runtime/disk/worker/read_worker_handler.ts";
import { fsError, MemoryWorkerFs } from "../../../helpers/disks/memory_worker_fs.ts";
import { patterned } from "../../../helpers/object_store_contract.ts";

const strideBytes = 4 * directIoAlignBytes;
const data = () => ({ memory: new SharedArrayBuffer(2 * strideBytes), strideBytes });

/** A handler over an in-memory file system holding `bytes` at /f, and the request for a read of it. */
function setup(bytes: Uint8Array) {
  const fs = new MemoryWorkerFs();
  const inode = fs.create("/f", bytes);
  const handler = new ReadHandler(fs, data());
  let seq = 0;
  const read = (position: number, length: number, options: { first?: boolean; direct?: boolean } = {}) => {
    const request: ReadRequest = {
      op: "read",
      fileId: 1,
      slot: 1,
      length,
      position,
      direct: options.direct ?? false,
    };
    if (options.first) Object.assign(request, { path: "/f", inode });
    return handler.answer({ ...request, seq: ++seq });
  };
  return { fs, handler, read, inode };
}

/** The bytes of slot 1 that an answer points at. */
function partOf(memory: SharedArrayBuffer, skip: number, bytesRead: number): Uint8Array {
  return new Uint8Array(memory, strideBytes + skip, bytesRead);
}

t.test("a buffered read fills the slot from its start; past the end it is short; the name comes once", (t) => {
  // Proves the buffered path and the protocol: the first request names the file, later ones do not,
  // and a read past the end returns what the file has.
  const content = patterned(10_000, 3);
  const fs = new MemoryWorkerFs();
  const inode = fs.create("/f", content);
  const memory = new SharedArrayBuffer(2 * strideBytes);
  const handler = new ReadHandler(fs, { memory, strideBytes });
  const first = handler.answer({
    seq: 7,
    op: "read",
    fileId: 1,
    path: "/f",
    inode,
    slot: 1,
    length: 5000,
    position: 100,
    direct: false,
  });
  t.same(first, { seq: 7, bytesRead: 5000, skip: 0, direct: false, stale: false, error: null });
  t.ok(
    Buffer.from(partOf(memory, 0, 5000)).equals(content.subarray(100, 5100)),
    "the bytes, at the slot's start",
  );
  const tail = handler.answer({
    seq: 8,
    op: "read",
    fileId: 1,
    slot: 1,
    length: 5000,
    position: 9000,
    direct: false,
  });
  t.equal(tail.bytesRead, 1000, "a read past the end returns what the file has");
  t.ok(Buffer.from(partOf(memory, 0, 1000)).equals(content.subarray(9000)));
  t.equal(
    handler.answer({ seq: 9, op: "read", fileId: 1, slot: 1, length: 10, position: 20_000, direct: false })
      .bytesRead,
    0,
  );
  t.equal(fs.opens.length, 1, "one descriptor, opened on the first read and kept");
  t.end();
});

t.test("a direct read reads the aligned span around the part, and says where in the slot it starts", (t) => {
  // Proves the widening: the part asked for is found `skip` bytes into the slot, its bytes intact,
  // and at the end of the file it is cut to what the file has.
  const content = patterned(3 * directIoAlignBytes + 500, 5);
  const fs = new MemoryWorkerFs();
  const inode = fs.create("/f", content);
  const memory = new SharedArrayBuffer(2 * strideBytes);
  const handler = new ReadHandler(fs, { memory, strideBytes });
  const position = directIoAlignBytes + 123;
  const answer = handler.answer({
    seq: 1,
    op: "read",
    fileId: 1,
    path: "/f",
    inode,
    slot: 1,
    length: 2000,
    position,
    direct: true,
  });
  t.same(answer, { seq: 1, bytesRead: 2000, skip: 123, direct: true, stale: false, error: null });
  t.ok(Buffer.from(partOf(memory, 123, 2000)).equals(content.subarray(position, position + 2000)));
  const end = handler.answer({
    seq: 2,
    op: "read",
    fileId: 1,
    slot: 1,
    length: 3 * directIoAlignBytes,
    position,
    direct: true,
  });
  t.equal(end.bytesRead, content.length - position, "cut at the end of the file");
  t.ok(Buffer.from(partOf(memory, 123, end.bytesRead)).equals(content.subarray(position)));
  t.same(fs.opens.map((o) => o.direct), [true], "only the direct descriptor was needed");
  t.end();
});

t.test("a file system that refuses O_DIRECT, on open or on a read, has the file read buffered from then on", (t) => {
  // Proves the fallback is silent and sticky: the bytes are the same, and no direct open is tried again.
  const content = patterned(2 * directIoAlignBytes, 9);
  for (const fault of ["refuseDirectOpen", "refuseDirectIo"] as const) {
    const { fs, read } = setup(content);
    fs[fault] = true;
    const first = read(10, 1000, { first: true, direct: true });
    t.same(first, { seq: 1, bytesRead: 1000, skip: 0, direct: false, stale: false, error: null }, fault);
    t.same(read(20, 1000, { direct: true }).direct, false);
    t.equal(fs.opens.filter((o) => o.direct).length, 1, `${fault}: one direct open, never retried`);
    t.equal(fs.openCount, 1, `${fault}: a refused direct descriptor is not kept open`);
  }
  t.end();
});

t.test("a removed or replaced file is stale until it is closed, and nothing of another file is read", (t) => {
  // Proves the inode check and the stale mark: the worker never reads another file at the name,
  // every read of a stale file says so, and closing forgets it.
  for (const change of ["removed", "replaced"] as const) {
    const { fs, handler, read } = setup(patterned(1000, 1));
    if (change === "removed") fs.remove("/f");
    else fs.create("/f", patterned(1000, 2));
    t.same(read(0, 100, { first: true }), {
      seq: 1,
      bytesRead: 0,
      skip: 0,
      direct: false,
      stale: true,
      error: null,
    }, change);
    t.equal(fs.openCount, 0, `${change}: nothing left open`);
    fs.create("/f", patterned(1000, 3));
    t.equal(read(0, 100).stale, true, `${change}: still stale, whatever is at the name now`);
    handler.answer({ seq: 99, op: "close", fileId: 1 });
    t.equal(handler.knownFiles, 0, `${change}: closing forgets it`);
  }
  t.end();
});

t.test("failures are answers: a file never named, an I/O error with its code", (t) => {
  // Proves the handler never throws: the thread around it only passes messages, so a throw would
  // leave the request unanswered.
  const { fs, handler, read } = setup(patterned(1000, 1));
  const unknown = read(0, 10);
  t.same(unknown, {
    seq: 1,
    bytesRead: 0,
    skip: 0,
    direct: false,
    stale: false,
    error: { code: undefined, message: "Cannot find file 1: the read worker was not told of it" },
  });
  fs.nextIoError = fsError("EIO", "i/o error, read");
  const failed = read(0, 10, { first: true });
  t.same(failed.error, { code: "EIO", message: "EIO: i/o error, read" });
  t.equal(failed.bytesRead, 0);
  t.equal(read(0, 10).bytesRead, 10, "the next read of the file works");
  t.same(
    handler.answer({
      seq: 5,
      op: "read",
      fileId: 2,
      path: "/g",
      slot: 0,
      length: 1,
      position: 0,
      direct: false,
    }).error
      ?.message,
    "Assertion failed: a read worker request names a file with its inode",
  );
  t.end();
});

t.test("close closes both of a file's descriptors and is answered", (t) => {
  const { fs, handler, read } = setup(patterned(2 * directIoAlignBytes, 1));
  read(0, 100, { first: true });
  read(0, 100, { direct: true });
  t.equal(fs.openCount, 2, "a buffered and a direct descriptor");
  t.same(handler.answer({ seq: 3, op: "close", fileId: 1 }), {
    seq: 3,
    bytesRead: 0,
    skip: 0,
    direct: false,
    stale: false,
    error: null,
  });
  t.equal(fs.openCount, 0);
  t.equal(
    handler.answer({ seq: 4, op: "close", fileId: 1 }).error,
    null,
    "closing an unknown file is no error",
  );
  t.end();
});
