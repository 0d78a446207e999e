import t from "tap";
import { yieldToReactor } from "../../src/runtime/cooperation/piece_gate.ts";
import { FsObjectStore, streamBuffersMax, syncEveryBytes } from "../../src/objectstore/fs_object_store.ts";
import { readFileSync, writeFileSync } from "node:fs";
import { pack } from "msgpackr";
import { NotFoundError, PreconditionFailedError } from "../../src/objectstore/object_store_errors.ts";
import {
  type CreateOptions,
  directIoAlignBytes,
  DiskError,
  type DiskFile,
} from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { bodyOf, objectStoreContract } from "../helpers/object_store_contract.ts";

// The contract on the fs backend: a directory with exact create-if-absent through link(2).
const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-fs-store-"), new Rng(1));
objectStoreContract(t, store, "strata/c1", { exactIfAbsent: true });

t.test("a missing object and a taken key keep the disk's error as their cause", async (t) => {
  // Proves the store's typed errors do not hide what the disk said (its code and path).
  const missing = await store.getRange("strata/c1/cause/missing", 0, 10).catch((e) => e);
  t.ok(missing instanceof NotFoundError);
  t.ok(
    missing.cause instanceof DiskError && missing.cause.code === "not_found",
    "the DiskError is its cause",
  );
  const put = () =>
    store.put("strata/c1/cause/taken", bodyOf(new Uint8Array([1])), {
      sizeBytes: 1,
      metadata: {},
      ifAbsent: true,
    });
  await put();
  const taken = await put().catch((e) => e);
  t.ok(taken instanceof PreconditionFailedError);
  t.ok(taken.cause instanceof DiskError && taken.cause.code === "exists", "the DiskError is its cause");
});

t.test("streamRange reads its pieces into two buffers in turn, the next while the sink has the last: nothing allocated per piece", async (t) => {
  const bytes = new Uint8Array(3_500_000).map((_, i) => i & 0xff);
  await store.put("strata/c1/one-buffer/x.log", bodyOf(bytes), {
    sizeBytes: bytes.length,
    metadata: {},
    ifAbsent: false,
  });
  const buffers: ArrayBufferLike[] = [];
  const received: Uint8Array[] = [];
  await store.streamRange("strata/c1/one-buffer/x.log", 0, bytes.length, async (piece) => {
    buffers.push(piece.buffer);
    // The sink takes a while: the next piece is read meanwhile, into the other buffer.
    await yieldToReactor();
    received.push(piece.slice());
  });
  t.equal(buffers.length, 4, "four pieces of at most 1 MiB");
  t.equal(new Set(buffers).size, 2, "in two buffers");
  t.ok(buffers.every((b, i) => i < 2 || b === buffers[i - 2]), "taken in turn");
  t.ok(Buffer.concat(received).equals(Buffer.from(bytes)), "every byte, in order, none overwritten early");
});

t.test("streams read into pooled buffers: the next stream reuses the buffer the last one gave back", async (t) => {
  const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-fs-pool-"), new Rng(2));
  const bytes = new Uint8Array(1_500_000).map((_, i) => (i * 7) & 0xff);
  await store.put("strata/c1/pool/x.log", bodyOf(bytes), {
    sizeBytes: bytes.length,
    metadata: {},
    ifAbsent: false,
  });
  const seen: ArrayBufferLike[] = [];
  for (let i = 0; i < 3; i++) {
    await store.streamRange("strata/c1/pool/x.log", 0, bytes.length, (piece) => {
      seen.push(piece.buffer);
      return Promise.resolve();
    });
    t.same(store.streamBuffers, { lentCount: 0, freeCount: 2 }, `stream ${i} gave its buffers back`);
  }
  t.equal(new Set(seen).size, 2, "three streams of two pieces, two buffers");
  const failure = new Error("sink failed");
  const failed = await store.streamRange(
    "strata/c1/pool/x.log",
    0,
    bytes.length,
    () => Promise.reject(failure),
  )
    .catch((e) => e);
  t.equal(failed, failure, "the sink's failure is the stream's");
  t.same(store.streamBuffers, { lentCount: 0, freeCount: 2 }, "a failed stream gives its buffers back too");
});

t.test(`at most ${streamBuffersMax} streams hold pooled buffers; others read into their own, none shared`, async (t) => {
  const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-fs-pool-"), new Rng(3));
  const streams = streamBuffersMax + 2;
  const bodies = Array.from(
    { length: streams },
    (_, s) => new Uint8Array(2_200_000).map((_, i) => (i + s * 31) & 0xff),
  );
  for (const [s, body] of bodies.entries()) {
    await store.put(`strata/c1/pool/${s}.log`, bodyOf(body), {
      sizeBytes: body.length,
      metadata: {},
      ifAbsent: false,
    });
  }
  // Every sink holds its first piece until all streams have one, so all read at once; each copies
  // what it is handed, and a buffer shared by two streams would mix their bytes.
  let waiting = 0;
  let releaseAll!: () => void;
  const allStarted = new Promise<void>((resolve) => (releaseAll = resolve));
  const firstBuffers = new Set<ArrayBufferLike>();
  let lentWhileAllRead = -1;
  const received = bodies.map(() => [] as Uint8Array[]);
  await Promise.all(
    bodies.map((body, s) =>
      store.streamRange(`strata/c1/pool/${s}.log`, 0, body.length, async (piece, position) => {
        if (position === 0) {
          firstBuffers.add(piece.buffer);
          if (++waiting === streams) {
            lentWhileAllRead = store.streamBuffers.lentCount;
            releaseAll();
          }
          await allStarted;
        }
        received[s]!.push(piece.slice());
      })
    ),
  );
  t.equal(firstBuffers.size, streams, "every stream had a buffer of its own");
  t.equal(lentWhileAllRead, streamBuffersMax, "the pool lent no more than its bound");
  t.same(
    store.streamBuffers,
    { lentCount: 0, freeCount: streamBuffersMax },
    "all given back, the bound kept",
  );
  for (const [s, body] of bodies.entries()) {
    const pieces = received[s]!;
    const got = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const piece of pieces) {
      got.set(piece, at);
      at += piece.length;
    }
    t.ok(Buffer.from(got).equals(Buffer.from(body)), `stream ${s} read its own bytes`);
  }
});

/** A NodeDisk that records, for its files, how their writes and fsyncs overlap; fsyncs can be made to fail. */
class OverlapDisk extends NodeDisk {
  syncsRunning = 0;
  syncsRunningMax = 0;
  writesDuringSync = 0;
  closesDuringSync = 0;
  failSyncNumber = 0;
  syncs = 0;
  bypassCacheAsked: boolean[] = [];

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    this.bypassCacheAsked.push(options?.bypassCache ?? false);
    const file = await super.createExclusive(path, options);
    const [writeAt, sync, close] = [file.writeAt.bind(file), file.sync.bind(file), file.close.bind(file)];
    file.writeAt = (data, position) => {
      if (this.syncsRunning > 0) this.writesDuringSync++;
      return writeAt(data, position);
    };
    file.sync = async () => {
      this.syncsRunning++;
      this.syncsRunningMax = Math.max(this.syncsRunningMax, this.syncsRunning);
      try {
        await sync();
        if (++this.syncs === this.failSyncNumber) throw new Error(`Cannot fsync ${path}: io`);
      } finally {
        this.syncsRunning--;
      }
    };
    file.close = () => {
      if (this.syncsRunning > 0) this.closesDuringSync++;
      return close();
    };
    return file;
  }
}

t.test("a put writes the next step while the last one's fsync runs, one fsync at a time", async (t) => {
  const disk = new OverlapDisk();
  const overlapped = new FsObjectStore(disk, tempDir(t, "strata-fs-overlap-"), new Rng(2));
  const bytes = new Uint8Array(6 * 1024 * 1024 + 12_345).map((_, i) => (i * 7) & 0xff);
  await overlapped.put("strata/c1/overlap/x.log", bodyOf(bytes, 1024 * 1024), {
    sizeBytes: bytes.length,
    metadata: {},
    ifAbsent: true,
  });
  // A fsync's completion is I/O, a later turn of the loop than the write it follows: a writer that
  // waited for each fsync would never write while one runs.
  // Each 1 MiB piece is written in steps of syncEveryBytes, each followed by an fsync.
  const stepsCount = 6 * Math.ceil((1024 * 1024) / syncEveryBytes) + Math.ceil(12_345 / syncEveryBytes);
  t.equal(disk.writesDuringSync, stepsCount - 1, "every step after the first was written while an fsync ran");
  t.equal(disk.syncsRunningMax, 1, "never two fsyncs of one file at once");
  t.equal(disk.closesDuringSync, 0, "the file is closed only after its last fsync");
  const pieces = await overlapped.getRange("strata/c1/overlap/x.log", 0, bytes.length);
  t.same(Buffer.concat(pieces), Buffer.from(bytes), "the object holds every byte");
});

t.test("a failed fsync behind the writer fails the put and publishes nothing", async (t) => {
  const disk = new OverlapDisk();
  const root = tempDir(t, "strata-fs-overlap-fail-");
  const failing = new FsObjectStore(disk, root, new Rng(3));
  disk.failSyncNumber = 2;
  const bytes = new Uint8Array(5 * 1024 * 1024).fill(9);
  await t.rejects(
    failing.put("strata/c1/overlap/y.log", bodyOf(bytes, 1024 * 1024), {
      sizeBytes: bytes.length,
      metadata: {},
      ifAbsent: true,
    }),
    /Cannot fsync .*: io/,
  );
  t.equal(await failing.head("strata/c1/overlap/y.log"), null, "no object");
  const leftovers = (await failing.list("strata/")).objects;
  t.same(leftovers, [], "nothing listed");
});

t.test("a put failing while an fsync runs closes its file only once the fsync has ended", async (t) => {
  const disk = new OverlapDisk();
  const failing = new FsObjectStore(disk, tempDir(t, "strata-fs-overlap-long-"), new Rng(4));
  const bytes = new Uint8Array(3 * 1024 * 1024).fill(5);
  // Two MiB declared, three sent: the third piece is refused while the second one's fsync runs.
  await t.rejects(
    failing.put("strata/c1/overlap/z.log", bodyOf(bytes, 1024 * 1024), {
      sizeBytes: 2 * 1024 * 1024,
      metadata: {},
      ifAbsent: true,
    }),
    /the body is longer than 2097152 bytes/,
  );
  t.equal(disk.closesDuringSync, 0, "no close while an fsync ran");
  t.equal(await failing.head("strata/c1/overlap/z.log"), null, "no object");
});

t.test("pieces smaller than a step share its fsync", async (t) => {
  // Proves the cadence counts bytes: 64 KiB pieces are not each followed by an fsync.
  const disk = new OverlapDisk();
  const small = new FsObjectStore(disk, tempDir(t, "strata-fs-small-pieces-"), new Rng(5));
  const bytes = new Uint8Array(3 * syncEveryBytes + 5).map((_, i) => (i * 3) & 0xff);
  await small.put("strata/c1/small/x.log", bodyOf(bytes, 64 * 1024), {
    sizeBytes: bytes.length,
    metadata: {},
    ifAbsent: true,
  });
  t.equal(disk.syncs, 3 + 1, "one fsync per whole step, and the last one after the header");
  t.same(Buffer.concat(await small.getRange("strata/c1/small/x.log", 0, bytes.length)), Buffer.from(bytes));
});

t.test("objects are written around the page cache, their body at an aligned offset", async (t) => {
  // Proves the layout that lets the body's writes skip the page cache: format 2's header names a
  // body offset that is a multiple of directIoAlignBytes, the body is there, and the store asks
  // its disk for bypassCache.
  const disk = new OverlapDisk();
  const root = tempDir(t, "strata-fs-layout-");
  const aligned = new FsObjectStore(disk, root, new Rng(6));
  const bytes = new Uint8Array(1024 * 1024 + 7).map((_, i) => (i * 11) & 0xff);
  await aligned.put("strata/c1/layout/x.log", bodyOf(bytes, 1024 * 1024), {
    sizeBytes: bytes.length,
    metadata: { note: "kept" },
    ifAbsent: true,
  });
  t.same(disk.bypassCacheAsked, [true], "the temp file was created with bypassCache");
  const raw = readFileSync(`${root}/objects/strata/c1/layout/x.log`);
  t.equal(raw.subarray(0, 8).toString(), "STRAOBJ2");
  const bodyOffset = raw.readUInt32LE(12);
  t.equal(bodyOffset % directIoAlignBytes, 0, `the body offset ${bodyOffset} is aligned`);
  t.ok(
    Buffer.from(bytes).equals(raw.subarray(bodyOffset)),
    "the body starts at the offset and runs to the end",
  );
  t.same((await aligned.head("strata/c1/layout/x.log"))?.metadata, { note: "kept" });
});

/** An object file in format 1 (magic, metadata length, metadata, body), as stores wrote before. */
function formatOneObject(meta: object, body: Uint8Array): Buffer {
  const metaBytes = pack(meta);
  const fixed = Buffer.alloc(12);
  fixed.write("STRAOBJ1", 0);
  fixed.writeUInt32LE(metaBytes.length, 8);
  return Buffer.concat([fixed, metaBytes, body]);
}

t.test("objects in format 1 are still read", async (t) => {
  // Proves an upgrade loses nothing: objects in format 1 are listed and read back intact.
  const root = tempDir(t, "strata-fs-format-one-");
  const old = new FsObjectStore(new NodeDisk(), root, new Rng(7));
  const body = new Uint8Array(300_000).map((_, i) => (i * 5) & 0xff);
  await old.put("strata/c1/v1/placeholder", bodyOf(new Uint8Array(1)), {
    sizeBytes: 1,
    metadata: {},
    ifAbsent: true,
  });
  writeFileSync(
    `${root}/objects/strata/c1/v1/x.log`,
    formatOneObject({ sizeBytes: body.length, metadata: { a: "b" }, etag: "0badf00d" }, body),
  );
  t.same(await old.head("strata/c1/v1/x.log"), {
    sizeBytes: body.length,
    metadata: { a: "b" },
    etag: "0badf00d",
  });
  t.same(
    Buffer.concat(await old.getRange("strata/c1/v1/x.log", 10, 250_000)),
    Buffer.from(body.subarray(10, 250_000)),
  );
});

t.test("a header whose body offset is out of range is refused as corrupt", async (t) => {
  // Proves the reader checks the offset it is given rather than reading the body from anywhere.
  const root = tempDir(t, "strata-fs-bad-offset-");
  const damaged = new FsObjectStore(new NodeDisk(), root, new Rng(8));
  await damaged.put("strata/c1/bad/x.log", bodyOf(new Uint8Array(10)), {
    sizeBytes: 10,
    metadata: {},
    ifAbsent: true,
  });
  const path = `${root}/objects/strata/c1/bad/x.log`;
  const raw = readFileSync(path);
  for (const offset of [15, raw.readUInt32LE(12) + directIoAlignBytes + 1]) {
    raw.writeUInt32LE(offset, 12);
    writeFileSync(path, raw);
    await t.rejects(damaged.head("strata/c1/bad/x.log"), { name: "CorruptError" }, `body offset ${offset}`);
  }
});

t.test("a page of a listing walks what it lists, not the whole bucket", async (t) => {
  let stats = 0;
  class StatCountingDisk extends NodeDisk {
    override stat(path: string) {
      stats++;
      return super.stat(path);
    }
  }
  const counted = new FsObjectStore(new StatCountingDisk(), tempDir(t), new Rng(5));
  const body = () => bodyOf(new Uint8Array([1]));
  for (let d = 0; d < 20; d++) {
    for (let k = 0; k < 20; k++) {
      await counted.put(`strata/c1/d${String(d).padStart(2, "0")}/k${String(k).padStart(2, "0")}`, body(), {
        sizeBytes: 1,
        metadata: {},
        ifAbsent: false,
      });
    }
  }
  stats = 0;
  const page = await counted.list("strata/c1/", { maxKeys: 5 });
  t.same(page.objects.map((o) => o.key.slice(-7)), ["d00/k00", "d00/k01", "d00/k02", "d00/k03", "d00/k04"]);
  t.ok(stats < 100, `${stats} stats for a page of 5 of 400 objects in 20 directories`);
});
