import t from "tap";
import { FsObjectStore, streamBuffersMax, syncEveryBytes } from "../../src/objectstore/fs_object_store.ts";
import type { DiskFile } from "../../src/runtime/disk.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { bodyOf, objectStoreContract } from "../helpers/object_store_contract.ts";

// The contract on the fs backend: a directory with exact create-if-absent through link(2).
const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-fs-store-"), new Rng(1));
objectStoreContract(t, store, "strata/c1", { exactIfAbsent: true });

t.test("streamRange reads every piece into one buffer: a stream allocates nothing per piece", async (t) => {
  const bytes = new Uint8Array(3_500_000).map((_, i) => i & 0xff);
  await store.put("strata/c1/one-buffer/x.log", bodyOf(bytes), {
    sizeBytes: bytes.length,
    metadata: {},
    ifAbsent: false,
  });
  const buffers = new Set<ArrayBufferLike>();
  let pieces = 0;
  await store.streamRange("strata/c1/one-buffer/x.log", 0, bytes.length, (piece) => {
    buffers.add(piece.buffer);
    pieces++;
    return Promise.resolve();
  });
  t.equal(pieces, 4, "four pieces of at most 1 MiB");
  t.equal(buffers.size, 1, "all in one buffer");
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
    t.same(store.streamBuffers, { lentCount: 0, freeCount: 1 }, `stream ${i} gave its buffer back`);
  }
  t.equal(new Set(seen).size, 1, "three streams, one buffer");
  const failure = new Error("sink failed");
  const failed = await store.streamRange(
    "strata/c1/pool/x.log",
    0,
    bytes.length,
    () => Promise.reject(failure),
  )
    .catch((e) => e);
  t.equal(failed, failure, "the sink's failure is the stream's");
  t.same(store.streamBuffers, { lentCount: 0, freeCount: 1 }, "a failed stream gives its buffer back too");
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
  #syncs = 0;

  override async createExclusive(path: string): Promise<DiskFile> {
    const file = await super.createExclusive(path);
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
        if (++this.#syncs === this.failSyncNumber) throw new Error(`Cannot fsync ${path}: io`);
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
