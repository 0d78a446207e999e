import t from "tap";
import { recoverSegments } from "../../../src/log/segment/recover_segments.ts";
import { Segment } from "../../../src/log/segment/segment.ts";
import { SegmentChain } from "../../../src/log/segment/segment_chain.ts";
import type { DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { appendOne, chainConfig, filledChain } from "../../helpers/chain_fixture.ts";
import { RecordingDisk } from "../../helpers/disks/recording_disk.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

t.test("appends take dense offsets and roll the active segment at its size", async (t) => {
  const { chain } = await filledChain(t, 10);
  const stats = chain.stats();
  t.same(stats.segments.map((s) => [s.startOffset, s.endOffset, s.sealed]), [
    [0, 3, true],
    [4, 7, true],
    [8, 9, false],
  ]);
  t.equal(chain.sealedCount, 2);
  t.equal(chain.visibleNextOffset(), 10);
  t.ok(
    chain.segments.slice(0, -1).every((s) => s.logFile === null),
    "sealed files closed",
  );
  t.equal((await appendOne(chain, 10)).baseOffset, 10);
});

t.test("what is appended is visible only once published", async (t) => {
  const { chain } = await filledChain(t, 1);
  await chain.append({
    kind: "messages",
    messages: [{ key: null, headers: {}, payload: new Uint8Array(10) }],
    stampAppendTime: false,
  }, chainConfig);
  t.equal(chain.visibleNextOffset(), 1, "appended, not yet published");
  t.ok(chain.dirty);
  await chain.flushPending();
  chain.publishVisible();
  t.equal(chain.visibleNextOffset(), 2);
});

t.test("a roll makes the sealed segment durable before the next one exists", async (t) => {
  const disk = new RecordingDisk();
  const { chain } = await filledChain(t, 1, disk);
  disk.ops.length = 0;
  await chain.roll();
  t.same(
    disk.ops,
    [
      "fsync 00000000000000000000.log",
      "open+create 00000000000000000000.index",
      "write 00000000000000000000.index",
      "fsync 00000000000000000000.index",
      "open+create 00000000000000000001.producers.tmp",
      "write 00000000000000000001.producers.tmp",
      "fsync 00000000000000000001.producers.tmp",
      "rename 00000000000000000001.producers.tmp 00000000000000000001.producers",
      "fsync dir",
      "create 00000000000000000001.log",
      "fsync dir",
    ],
    "the sealed segment's index is written whole, then the producer snapshot where the next starts; the new active segment has no index",
  );
  t.notOk(chain.dirty);
});

t.test("the active segment never leaves the chain; a purged chain restarts at 0", async (t) => {
  const { chain } = await filledChain(t, 6);
  t.equal(chain.shiftFront().startOffset, 0);
  t.throws(() => chain.shiftFront(), /the active segment never leaves the chain/);
  const taken = chain.takeAll();
  t.same(taken.map((s) => s.startOffset), [4]);
  t.same(chain.segments, []);
  for (const s of taken) await s.logFile?.close();
  const elsewhere = tempDir(t);
  t.throws(
    () => chain.restart(new Segment(elsewhere, 5)),
    /a chain restarts where it ends/,
    "with nothing before it, only at offset 0",
  );
  chain.restart(await SegmentChain.createSegment(new NodeDisk(), elsewhere, 0));
  t.equal(chain.visibleNextOffset(), 0);
  t.notOk(chain.dirty);
  t.equal((await appendOne(chain, 1)).baseOffset, 0);
});

t.test("local bytes leave out remote segments", async (t) => {
  const { chain } = await filledChain(t, 10);
  const all = chain.stats().sizeBytes;
  chain.segments[0]!.location = "remote";
  t.equal(chain.localBytes(), all - chain.segments[0]!.sizeBytes);
});

t.test("close syncs the active log; recovery rebuilds the active index and finds the same chain", async (t) => {
  const { chain, dir } = await filledChain(t, 9);
  const before = chain.stats();
  await chain.close(null, () => false);
  const report = await recoverSegments(
    new NodeDisk(),
    dir,
    chainConfig.indexIntervalBytes,
    "t",
    silentLogger(),
  );
  const again = new SegmentChain(new NodeDisk(), dir, new VirtualClock(), report.segments);
  t.same(again.stats(), before);
  t.equal(report.rebuiltIndexes, 0);
  await again.close(null, () => false);
});

t.test("the background fsync runs beside the writer and hands a failure to its caller", async (t) => {
  class FailingSyncDisk extends NodeDisk {
    override async createExclusive(path: string): Promise<DiskFile> {
      const file = await super.createExclusive(path);
      file.sync = () => Promise.reject(new Error("EIO on fsync"));
      return file;
    }
    override open(path: string, options?: OpenOptions): Promise<DiskFile> {
      return super.open(path, options);
    }
  }
  const { chain } = await filledChain(t, 1, new FailingSyncDisk());
  await chain.append({
    kind: "messages",
    messages: [{ key: null, headers: {}, payload: new Uint8Array(10) }],
    stampAppendTime: false,
  }, chainConfig);
  await chain.flushPending();
  let failure: Error | null = null;
  chain.startBackgroundSync((error) => (failure = error));
  t.ok(chain.backgroundSync !== null, "it runs");
  t.notOk(chain.dirty, "what it covers is no longer dirty");
  await chain.backgroundSync;
  t.match((failure as Error | null)?.message, /EIO on fsync/);
  t.equal(chain.backgroundSync, null);
});
