import t, { type Test } from "tap";
import { Partition } from "../../src/log/partition/partition.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { LocalEvictions } from "../../src/tier/local_evictions.ts";
import type { TieredPartition } from "../../src/tier/tier_service.ts";
import { logConfig } from "../helpers/tier_harness.ts";
import { settlesWithin } from "../helpers/wait_for.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** A partition of six sealed 50 kB segments, tiered with a 100 kB envelope. */
async function tieredPartition(t: Test) {
  const clock = new VirtualClock();
  const partition = await Partition.create(new NodeDisk(), clock, new Rng(1), tempDir(t), {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, logConfig);
  t.teardown(() => partition.close());
  for (let i = 0; i < 30; i++) {
    await partition.log.append([{ key: null, headers: {}, payload: new Uint8Array(10_000).fill(i) }]);
  }
  const p: TieredPartition = {
    key: "1/1/0",
    partition,
    tiered: () => true,
    envelope: () => ({ ageMs: null, sizeBytes: 100_000 }),
  };
  return { p, partition, clock };
}

const floorTo = (partition: Partition, upToOffset: number) =>
  partition.applyFloor({ kind: "advance_tiered_floor", partition: "1/1/0", purgeGeneration: 0, upToOffset });

t.test("above the floor nothing is evicted; the envelope's wish is reported as pressure", async (t) => {
  const { p } = await tieredPartition(t);
  const evictions = new LocalEvictions(new VirtualClock(), silentLogger());
  const pressure: boolean[] = [];
  t.equal(evictions.look(p, (underPressure) => pressure.push(underPressure)), null, "no pass started");
  t.same(pressure, [true], "the floor is 0 and the local bytes are over the envelope");
  t.same(p.partition.log.segments.filter((s) => s.location === "remote"), []);
});

t.test("below the floor: one pass at a time evicts down to the envelope, with the uploads' checksums", async (t) => {
  const { p, partition } = await tieredPartition(t);
  const sealed = partition.log.segments.filter((s) => s.sealed);
  t.ok(sealed.length >= 4, `${sealed.length} sealed segments`);
  await floorTo(partition, sealed.at(-1)!.endOffset + 1);
  const evictions = new LocalEvictions(new VirtualClock(), silentLogger());
  for (const s of sealed) evictions.noteUploaded(p.key, s.startOffset, 1000 + s.startOffset);
  const pressure: boolean[] = [];
  const onPressure = (underPressure: boolean) => pressure.push(underPressure);
  const pass = evictions.look(p, onPressure);
  t.not(pass, null, "an eviction pass started");
  t.equal(evictions.look(p, onPressure), null, "the second look found its pass running");
  t.same(pressure, [], "and neither look reported pressure");
  await settlesWithin(pass!, "the eviction pass");
  t.ok(partition.log.localSizeBytes <= 100_000, `local bytes ${partition.log.localSizeBytes}`);
  const remote = partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remote.length > 0, `${remote.length} segments evicted`);
  t.ok(
    remote.every((s) => s.marker!.logCrc32 === 1000 + s.startOffset),
    "each marker carries the checksum the upload computed: the .log was not read again",
  );
  // A sealed local segment is still below the floor: a look starts a pass, which the envelope
  // leaves with nothing to evict.
  const localBytes = partition.log.localSizeBytes;
  const next = evictions.look(p, onPressure);
  t.not(next, null, "once the pass ended, the next look starts one again");
  await settlesWithin(next!, "the next eviction pass");
  t.equal(partition.log.localSizeBytes, localBytes, "which keeps what the envelope holds");
  t.same(pressure, [], "no look reported pressure");
});
