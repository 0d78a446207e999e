import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import { PartitionLog } from "../../src/log/partition_log.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { initCrc32c } from "../../src/runtime/crc32c.ts";
import { crc32 } from "../../src/runtime/crc32.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { TokenBucket } from "../../src/runtime/token_bucket.ts";
import { VirtualClock } from "../../src/runtime/virtual_clock.ts";
import { segmentKeys } from "../../src/tier/object_keys.ts";
import { uploadSegment } from "../../src/tier/segment_uploader.ts";
import { bodyOf } from "../helpers/object_store_contract.ts";
import { tempDir } from "../helpers/temp_dir.ts";

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

async function setup(t: Test) {
  const disk = new NodeDisk();
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
  const segment = {
    logPath: sealed.logPath,
    indexPath: sealed.indexPath,
    startOffset: sealed.startOffset,
    endOffset: sealed.endOffset,
    startTimestampUs: sealed.firstTimestampUs!,
    maxTimestampUs: sealed.maxTimestampUs,
  };
  return { deps, sim, segment, bandwidth, keys: segmentKeys(incarnation, sealed.startOffset) };
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
    "max-timestamp": String(segment.maxTimestampUs),
    "size": String(logBytes.length),
    "index-size": String(readFileSync(segment.indexPath).length),
    "crc32": String(crc32(logBytes)),
    "format-version": "1",
  });
  t.equal(
    Math.round(before - bandwidth.tokens),
    logBytes.length + readFileSync(segment.indexPath).length,
    "charged once, whole segment",
  );
});

t.test("the send pass reads every piece of a segment into one buffer: it allocates nothing per piece", async (t) => {
  const { deps, segment, keys } = await setup(t);
  const buffers = new Set<ArrayBufferLike>();
  let pieces = 0;
  const store = deps.store;
  // A store that notes the buffer under each piece of the .log, then stores as the real one does.
  const noting = Object.create(store) as typeof store;
  noting.put = (key, body, options) =>
    store.put(key, async function* () {
      for await (const piece of body()) {
        if (key === keys.log) {
          buffers.add(piece.buffer);
          pieces++;
        }
        yield piece;
      }
    }, options);
  await uploadSegment({ ...deps, store: noting }, segment, keys, 1e12);
  t.ok(pieces >= 4, `${pieces} pieces of 64 KiB`);
  t.equal(buffers.size, 1, "one buffer under every piece");
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

t.test("the benchmark's naive upload (whole file, no pieces) stores the same objects and metadata", async (t) => {
  const cooperativeRun = await setup(t);
  const naiveRun = await setup(t);
  await uploadSegment(cooperativeRun.deps, cooperativeRun.segment, cooperativeRun.keys, 1e12);
  const outcome = await uploadSegment(
    { ...naiveRun.deps, naive: true },
    naiveRun.segment,
    naiveRun.keys,
    1e12,
  );
  t.match(outcome, { kind: "uploaded", logCrc32: crc32(readFileSync(naiveRun.segment.logPath)) });
  for (const key of [naiveRun.keys.log, naiveRun.keys.index]) {
    const naive = naiveRun.sim.peek(key)!;
    t.ok(
      Buffer.compare(
        naive.bytes,
        readFileSync(key.endsWith(".log") ? naiveRun.segment.logPath : naiveRun.segment.indexPath),
      ) === 0,
      `${key} is the file`,
    );
    t.equal(
      naive.metadata["crc32"],
      cooperativeRun.sim.peek(key)!.metadata["crc32"],
      "same checksum metadata",
    );
  }
});
