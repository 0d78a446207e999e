import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { AbortedTxnIndex } from "../../../src/log/producers/aborted_txns.ts";
import t, { type Test } from "tap";
import { PartitionLog } from "../../../src/log/partition/partition_log.ts";
import {
  type DeadlineObjectStore,
  RetryingObjectStore,
} from "../../../src/objectstore/retrying_object_store.ts";
import { defaultRetryProfiles } from "../../../src/objectstore/retry_policy.ts";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { crc32 } from "../../../src/runtime/checksum/crc32.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { sealedSegmentOf, uploadSegment } from "../../../src/tier/upload/segment_uploader.ts";
import type { BodySource, ObjectStore } from "../../../src/objectstore/object_store.ts";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { LogReadsDisk } from "../../helpers/disks/log_reads_disk.ts";
import { bodyOf } from "../../helpers/object_store_contract.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

await initCrc32c();
const incarnation = {
  prefix: "strata",
  clusterId: "c0ffee",
  streamId: 1,
  topicId: 2,
  partitionId: 0,
  createdRevision: "0123456789abcdef",
  purgeGeneration: 0,
};

async function setup(t: Test, disk: NodeDisk = new NodeDisk()) {
  const dir = tempDir(t);
  const clock = new VirtualClock();
  const log = new PartitionLog(
    disk,
    dir,
    clock,
    {
      segmentSizeBytes: 300_000,
      segmentMaxAgeMs: null,
      indexIntervalBytes: 4096,
      fsync: "always",
      fsyncIntervalMs: 1000,
      writeQueueMax: 100,
    },
    [await PartitionLog.createSegment(disk, dir, 0)],
    "t",
  );
  t.teardown(() => log.close());
  for (let i = 0; i < 40; i++) {
    await log.append([{ key: null, headers: {}, payload: new Uint8Array(10_000).fill(i) }]);
  }
  const sealed = log.segments[0]!;
  t.ok(sealed.sealed, "the first segment is sealed");
  const sim = new SimObjectStore(clock, new Rng(1));
  const store = new RetryingObjectStore(sim, clock, new Rng(2), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const bandwidth = new TokenBucket(clock, {
    rateBytesPerSec: 1e12,
    burstBytes: 1e12,
    waitersMax: 10,
    name: "upload bandwidth",
  });
  const deps = { disk, store, pieceBytes: 64 * 1024, bandwidth };
  const segment = sealedSegmentOf(sealed);
  return { deps, sim, segment, bandwidth, keys: segmentKeys(incarnation, sealed.startOffset, null) };
}

t.test("a sealed segment's .log and .index land under the incarnation's keys, byte for byte, with rebuildable metadata", async (t) => {
  const { deps, sim, segment, keys, bandwidth } = await setup(t);
  t.equal(keys.log, "strata/c0ffee/1/2/0/0123456789abcdef-0/00000000000000000000.log");
  const before = bandwidth.tokens;
  const outcome = await uploadSegment(deps, segment, keys, 1e12);
  const logBytes = readFileSync(segment.logPath);
  t.match(outcome, { kind: "uploaded", sizeBytes: logBytes.length, alreadyThere: false });
  t.ok(Buffer.compare(sim.peek(keys.log)!.bytes, logBytes) === 0, "the .log object is the file");
  t.ok(
    Buffer.compare(sim.peek(keys.index)!.bytes, readFileSync(segment.indexPath)) === 0,
    "the .index object is the file",
  );
  t.same(sim.peek(keys.log)!.metadata, {
    "start-offset": "0",
    "end-offset": String(segment.endOffset),
    "start-timestamp": String(segment.startTimestampUs),
    "end-timestamp": String(segment.maxTimestampUs),
    "max-timestamp": String(segment.maxTimestampUs),
    "size": String(logBytes.length),
    "index-size": String(readFileSync(segment.indexPath).length),
    "crc32": String(crc32(logBytes)),
    "format-version": "2",
  });
  const producerBytes = readFileSync(segment.producersPath);
  t.ok(
    Buffer.compare(sim.peek(keys.producers)!.bytes, producerBytes) === 0,
    "the .producers object is the snapshot taken where the segment ends",
  );
  t.match(outcome, { sidecarSizeBytes: producerBytes.length });
  t.equal(
    Math.round(before - bandwidth.tokens),
    logBytes.length + readFileSync(segment.indexPath).length + producerBytes.length,
    "charged for each object, once",
  );
});

t.test("a segment whose producer snapshot is gone goes up without one", async (t) => {
  const { deps, sim, segment, keys } = await setup(t);
  rmSync(segment.producersPath);
  t.match(await uploadSegment(deps, segment, keys, 1e12), { kind: "uploaded", sidecarSizeBytes: 0 });
  t.ok(sim.peek(keys.log) !== undefined && sim.peek(keys.index) !== undefined, "its .log and .index");
  t.equal(sim.peek(keys.producers), undefined, "and no .producers object");
});

t.test("a segment with an aborted-transaction index goes up with it, byte for byte", async (t) => {
  const { deps, sim, segment, keys } = await setup(t);
  const index = new AbortedTxnIndex();
  index.add({ producerId: 7, firstOffset: 1, lastOffset: 3, lastStableOffset: 4 });
  writeFileSync(segment.txnIndexPath, index.encode());
  const outcome = await uploadSegment(deps, segment, keys, 1e12);
  t.ok(
    Buffer.compare(sim.peek(keys.txnindex)!.bytes, index.encode()) === 0,
    "the .txnindex object is the file",
  );
  t.match(outcome, {
    kind: "uploaded",
    sidecarSizeBytes: readFileSync(segment.producersPath).length + index.encode().length,
  });
  rmSync(segment.txnIndexPath);
  const again = await setup(t);
  await uploadSegment(again.deps, again.segment, again.keys, 1e12);
  t.equal(again.sim.peek(again.keys.txnindex), undefined, "a segment without aborts has no such object");
});

t.test("the send pass reads its pieces into two buffers in turn: it allocates nothing per piece", async (t) => {
  const { deps, segment, keys } = await setup(t);
  const buffers: ArrayBufferLike[] = [];
  const store = deps.store;
  // A store that notes the buffer under each piece of the .log, then stores as the real one does.
  const noting = Object.create(store) as typeof store;
  noting.put = (key, body, options) =>
    store.put(key, async function* () {
      for await (const piece of body()) {
        if (key === keys.log) buffers.push(piece.buffer);
        yield piece;
      }
    }, options);
  await uploadSegment({ ...deps, store: noting }, segment, keys, 1e12);
  t.ok(buffers.length >= 4, `${buffers.length} pieces of 64 KiB`);
  t.equal(new Set(buffers).size, 2, "two buffers under every piece");
  t.ok(
    buffers.every((b, i) => i === 0 || b !== buffers[i - 1]),
    "each piece in the other buffer than the one before",
  );
});

t.test("a re-upload after a crash meets the existing objects and counts as success", async (t) => {
  const { deps, sim, segment, keys } = await setup(t);
  await uploadSegment(deps, segment, keys, 1e12);
  const again = await uploadSegment(deps, segment, keys, 1e12);
  t.match(again, { kind: "uploaded", alreadyThere: true });
  t.equal(sim.count("put", keys.log), 2, "the second create was refused by the store");
  t.equal(sim.count("head", keys.log), 1, "and checked with a HEAD");
});

t.test("an existing object with other bytes is an anomaly: reported, never overwritten", async (t) => {
  const { deps, sim, segment, keys } = await setup(t);
  const other = new Uint8Array(1000).fill(9);
  await sim.put(keys.log, bodyOf(other), {
    sizeBytes: other.length,
    metadata: { crc32: String(crc32(other)) },
    ifAbsent: false,
  });
  const outcome = await uploadSegment(deps, segment, keys, 1e12);
  t.equal(outcome.kind, "anomaly");
  t.match(outcome.kind === "anomaly" ? outcome.detail : "", /exists with size 1000/);
  t.same([...sim.peek(keys.log)!.bytes.subarray(0, 3)], [9, 9, 9], "the existing object is untouched");
});

/**
 * The uploader's store (the sim store itself, without the retry layer, so that an error ends the
 * upload), with a look at each piece of the `.log`'s PUT as it arrives: `onPiece`
 * runs with the piece's index before the store takes it, and may delay or fail it.
 */
function watchedStore(
  store: ObjectStore,
  onPiece: (index: number) => Promise<void>,
): DeadlineObjectStore {
  async function* watch(body: BodySource) {
    let index = 0;
    for await (const piece of body()) {
      await onPiece(index++);
      yield piece;
    }
  }
  return {
    put: (key, body, options) => store.put(key, key.endsWith(".log") ? () => watch(body) : body, options),
    getRange: (key, start, endExclusive) => store.getRange(key, start, endExclusive),
    streamRange: (key, start, endExclusive, sink) => store.streamRange(key, start, endExclusive, sink),
    head: (key) => store.head(key),
    list: (prefix, options) => store.list(prefix, options),
    delete: (keys) => store.delete(keys),
  };
}

/** The setup over a disk that notes the `.log`'s reads, counted from the upload's first. */
async function setupWithLogReads(t: Test) {
  const disk = new LogReadsDisk();
  const setUp = await setup(t, disk);
  disk.reads.length = 0;
  const piecesPerPass = Math.ceil(readFileSync(setUp.segment.logPath).length / setUp.deps.pieceBytes);
  return { ...setUp, disk, piecesPerPass };
}

t.test("while the store works on a piece, the next one is already being read; the objects are still the files", async (t) => {
  const { disk, deps, sim, segment, keys, piecesPerPass } = await setupWithLogReads(t);
  t.ok(piecesPerPass >= 4, `${piecesPerPass} pieces a pass`);
  const readsStartedAtPiece: number[] = [];
  const store = watchedStore(sim, () => {
    readsStartedAtPiece.push(disk.reads.length);
    return Promise.resolve();
  });
  const outcome = await uploadSegment({ ...deps, store }, segment, keys, 1e12);
  t.equal(outcome.kind, "uploaded");
  // The hash pass read every piece before the send pass began; in the send pass, piece i arrives
  // with piece i + 1 already asked for (one read per piece: the disk returns whole pieces).
  t.same(
    readsStartedAtPiece,
    readsStartedAtPiece.map((_, i) => piecesPerPass + Math.min(i + 2, piecesPerPass)),
    "each piece arrives with its successor's read started",
  );
  t.equal(readsStartedAtPiece.length, piecesPerPass, "every piece was sent");
  t.ok(
    Buffer.compare(sim.peek(keys.log)!.bytes, readFileSync(segment.logPath)) === 0,
    "the .log object is the file",
  );
});

t.test("a read ahead that fails while the store works on a piece fails the upload with the disk's error, handled", async (t) => {
  const { disk, deps, sim, segment, keys, piecesPerPass } = await setupWithLogReads(t);
  // The send pass's second read is the first read ahead; it fails while the store holds piece 0,
  // which the store takes only a turn of the loop after the failure: the turn at whose end Node
  // reports a rejection nobody handles.
  disk.failRead = { index: piecesPerPass + 1, delayMs: 0 };
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  t.teardown(() => process.off("unhandledRejection", onUnhandled));
  const aTurnAfterTheFailure = disk.readFailed.then(() => new Promise<void>((r) => setImmediate(r)));
  const store = watchedStore(sim, (index) => index === 0 ? aTurnAfterTheFailure : Promise.resolve());
  await t.rejects(uploadSegment({ ...deps, store }, segment, keys, 1e12), DiskError);
  t.same(unhandled, [], "no unhandled rejection");
  t.equal(disk.closesUnderRead, 0, "the .log was not closed under a read");
});

t.test("a store that stops pulling while a read ahead runs fails the upload with its own error, and the file outlives the read", async (t) => {
  const { disk, deps, sim, segment, keys, piecesPerPass } = await setupWithLogReads(t);
  // The read ahead of piece 1 is slow (and fails), and the store gives up on piece 0 meanwhile.
  disk.failRead = { index: piecesPerPass + 1, delayMs: 40 };
  const store = watchedStore(sim, (index) => {
    return index === 0 ? Promise.reject(new Error("the store gave up")) : Promise.resolve();
  });
  await t.rejects(uploadSegment({ ...deps, store }, segment, keys, 1e12), { message: "the store gave up" });
  t.equal(disk.closesUnderRead, 0, "the .log was closed only after its read ahead ended");
});
