import t from "tap";
import { directIoAlignBytes } from "../../../../src/runtime/disk/disk.ts";
import { WriteHandler, type WriteRequest } from "../../../../src/runtime/disk/worker/write_worker_handler.ts";
import { fsError, MemoryWorkerFs } from "../../../helpers/disks/memory_worker_fs.ts";
import { patterned } from "../../../helpers/object_store_contract.ts";

const strideBytes = 4 * directIoAlignBytes;

/**
 * A handler over an in-memory file system with an empty file at /f, and a way to write `bytes` at
 * `position` of it through slot 1, as the loop does: copy them into the slot, then send the request.
 */
function setup() {
  const fs = new MemoryWorkerFs();
  const inode = fs.create("/f");
  const memory = new SharedArrayBuffer(2 * strideBytes);
  const handler = new WriteHandler(fs, { memory, strideBytes });
  let seq = 0;
  const write = (
    bytes: Uint8Array,
    position: number,
    options: { first?: boolean; direct?: boolean } = {},
  ) => {
    new Uint8Array(memory, strideBytes, bytes.length).set(bytes);
    const request: WriteRequest = {
      op: "write",
      fileId: 1,
      slot: 1,
      length: bytes.length,
      position,
      direct: options.direct ?? false,
    };
    if (options.first) Object.assign(request, { path: "/f", inode });
    return handler.answer({ ...request, seq: ++seq });
  };
  return { fs, handler, write };
}

t.test("a write lands where asked, through short writes, with the name sent once", (t) => {
  // Proves the loop over short writes (each pass writes at least a byte) and the protocol.
  const { fs, write } = setup();
  fs.writeBytesMax = 1000;
  const first = patterned(5000, 1);
  t.same(write(first, 0, { first: true }), { seq: 1, directBytes: 0, error: null });
  const second = patterned(3000, 2);
  t.same(write(second, 7000, {}), { seq: 2, directBytes: 0, error: null });
  const onDisk = fs.bytesOf("/f");
  t.equal(onDisk.length, 10_000);
  t.ok(Buffer.from(onDisk.subarray(0, 5000)).equals(first), "the first write's bytes");
  t.ok(Buffer.from(onDisk.subarray(7000)).equals(second), "the second write's bytes, at its position");
  t.same(fs.opens, [{ path: "/f", direct: false }], "one buffered descriptor, kept");
  t.end();
});

t.test("a direct write sends the aligned prefix around the page cache and the rest buffered", (t) => {
  // Proves the split and its count: two alignments go direct, the 100 bytes after them buffered.
  const { fs, write } = setup();
  const bytes = patterned(2 * directIoAlignBytes + 100, 3);
  t.same(write(bytes, 0, { first: true, direct: true }), {
    seq: 1,
    directBytes: 2 * directIoAlignBytes,
    error: null,
  });
  t.ok(Buffer.from(fs.bytesOf("/f")).equals(bytes), "the bytes intact");
  t.same(fs.opens.map((o) => o.direct), [false, true], "a buffered and a direct descriptor");
  t.end();
});

t.test("a file system that refuses O_DIRECT, on open or on a write, has the file written buffered from then on", (t) => {
  // Proves the fallback: nothing is counted as direct, the bytes still land, and no direct open is
  // tried again for the file.
  for (const fault of ["refuseDirectOpen", "refuseDirectIo"] as const) {
    const { fs, write } = setup();
    fs[fault] = true;
    const bytes = patterned(2 * directIoAlignBytes, 4);
    t.same(write(bytes, 0, { first: true, direct: true }), { seq: 1, directBytes: 0, error: null }, fault);
    t.same(write(bytes, bytes.length, { direct: true }).directBytes, 0);
    t.ok(Buffer.from(fs.bytesOf("/f").subarray(bytes.length)).equals(bytes), `${fault}: the bytes landed`);
    t.equal(fs.opens.filter((o) => o.direct).length, 1, `${fault}: one direct open, never retried`);
    t.equal(fs.openCount, 1, `${fault}: a refused direct descriptor is not kept open`);
  }
  t.end();
});

t.test("a file replaced or removed under its name is an error, never a write to another file", (t) => {
  // Proves the inode check: the replacement at the name is untouched, and a removed name fails with
  // the system's code (which the loop turns into DiskError code not_found).
  const replaced = setup();
  replaced.fs.create("/f", new Uint8Array([1, 2, 3]));
  t.same(replaced.write(patterned(100, 1), 0, { first: true }), {
    seq: 1,
    directBytes: 0,
    error: { code: undefined, message: "Cannot write /f: it is no longer the file that was opened" },
  });
  t.same([...replaced.fs.bytesOf("/f")], [1, 2, 3], "the file now at the name is untouched");
  t.equal(replaced.fs.openCount, 0, "nothing left open");
  const removed = setup();
  removed.fs.remove("/f");
  t.equal(removed.write(patterned(100, 1), 0, { first: true }).error?.code, "ENOENT");
  t.end();
});

t.test("a failed write answers with the bytes it had already sent around the page cache", (t) => {
  // Proves the count survives a failure part-way: the direct prefix went out before the buffered
  // rest failed, and the loop's counter must hear of it.
  const { fs, write } = setup();
  fs.bufferedWriteError = fsError("ENOSPC", "no space left on device, write");
  t.same(write(patterned(directIoAlignBytes + 10, 5), 0, { first: true, direct: true }), {
    seq: 1,
    directBytes: directIoAlignBytes,
    error: { code: "ENOSPC", message: "ENOSPC: no space left on device, write" },
  });
  fs.bufferedWriteError = null;
  fs.writeBytesMax = 0;
  t.same(write(patterned(10, 6), 0), {
    seq: 2,
    directBytes: 0,
    error: { code: undefined, message: "Cannot write /f: the write made no progress" },
  }, "a write that makes no progress fails rather than loop");
  t.end();
});

t.test("errors are answers with their codes; a file never named fails; close closes both descriptors", (t) => {
  const { fs, handler, write } = setup();
  t.same(write(patterned(10, 1), 0).error, {
    code: undefined,
    message: "Cannot find file 1: the write worker was not told of it",
  });
  write(patterned(directIoAlignBytes, 1), 0, { first: true, direct: true });
  fs.nextIoError = fsError("ENOSPC", "no space left on device, write");
  t.same(write(patterned(10, 1), 0).error, {
    code: "ENOSPC",
    message: "ENOSPC: no space left on device, write",
  });
  t.equal(fs.openCount, 2);
  t.same(handler.answer({ seq: 9, op: "close", fileId: 1 }), { seq: 9, directBytes: 0, error: null });
  t.equal(fs.openCount, 0);
  t.equal(handler.knownFiles, 0);
  t.end();
});
