import t from "tap";
import type { LogConfig } from "../../../src/log/log_config.ts";
import { Partition } from "../../../src/log/partition/partition.ts";
import { producerExpiryCheckIntervalMs } from "../../../src/log/partition/partition_log.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { chainConfig } from "../../helpers/chain_fixture.ts";
import { idempotentBatch } from "../../helpers/kafka/idempotent_batch.ts";

// The log's tick forgets idempotent producers whose last batch is older than
// producer_id_expiration, looking once a minute; a forgotten producer starts at any sequence.
await initCrc32c();
const config: LogConfig = {
  ...chainConfig,
  segmentSizeBytes: 1 << 20,
  indexIntervalBytes: 4096,
  producerIdExpirationMs: 3_600_000,
};

t.test("an idle producer is forgotten once its last batch is older than the expiration", async (t) => {
  // The batches' timestamp (1_700_000_000_000) is the clock's wall time at 0.
  const clock = new VirtualClock();
  const p = await Partition.create(new NodeDisk(), clock, new Rng(1), tempDir(t), {
    streamId: 1,
    topicId: 1,
    partitionId: 0,
  }, config);
  t.teardown(() => p.close());
  t.equal(p.log.onTick(clock.nowMs()), Infinity, "no producer, nothing to look for");
  await p.log.appendRecordBatches(idempotentBatch(5, 0, 0, 1));
  t.equal(p.log.onTick(clock.nowMs()), producerExpiryCheckIntervalMs, "the next look, a minute on");
  t.equal(p.log.producers.size, 1);
  clock.advance(3_600_000 - 1);
  p.log.onTick(clock.nowMs());
  t.equal(p.log.producers.size, 1, "a millisecond short of the expiration: kept");
  clock.advance(producerExpiryCheckIntervalMs);
  p.log.onTick(clock.nowMs());
  t.equal(p.log.producers.size, 0, "past it: forgotten");
  t.same(
    await p.log.appendRecordBatches(idempotentBatch(5, 0, 7, 1)),
    { baseOffset: 1, count: 1 },
    "it starts anywhere",
  );
});
