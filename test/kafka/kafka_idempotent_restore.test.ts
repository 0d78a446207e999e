import t from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { InFlightDisk } from "../helpers/disks/in_flight_disk.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import {
  kafkaRequest,
  KafkaWireClient,
  produceBody,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";
import { idempotentBatch } from "../helpers/kafka/idempotent_batch.ts";
import { openServer } from "../helpers/open_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";

// An idempotent producer's state goes to the bucket with each segment (the snapshot taken at its
// end), so a topic restored from the bucket knows the producers of its restored segments: a retry
// of a batch produced before the restore is answered with the offset it was first given.

const producerId = 40;

t.test("a restored topic deduplicates a retry of a batch produced before the restore", async (t) => {
  const inFlight = new InFlightDisk(new NodeDisk());
  const s = await openServer(t, {}, tempDir(t), inFlight);
  const http = s.client();
  const listener = await openTestListener(t, s.server, s.clock);
  const kafka = await KafkaWireClient.connect(listener.address.port);
  t.teardown(() => kafka.close());
  let correlation = 0;
  const produce = async (topic: string, batch: Uint8Array) => {
    kafka.send(kafkaRequest(apiKey.produce, 7, ++correlation, produceBody(topic, 0, batch)));
    const r = (await kafka.next())!;
    t.equal(r.int32(), correlation, "answers in order");
    return readProduceAnswer(r, 7);
  };
  const partitionOf = async (topic: string) =>
    (await http.partition("kafka", topic, 0)) as { next_offset: number };
  await http.createStream("kafka");
  await http.createTopic("kafka", { name: "t", segment_size: "1 MiB", local_retention_size: "1 MiB" });

  // Producer 40's batches, one record each, among others' large ones: segments roll between them.
  const first: number[] = [];
  for (let sequence = 0; sequence < 8; sequence++) {
    const answer = await produce("t", idempotentBatch(producerId, 0, sequence, 1));
    t.equal(answer.errorCode, kafkaErrorCode.none);
    first.push(answer.baseOffset);
    for (let i = 0; i < 4; i++) await http.produce("kafka", "t", [{ payload: new Uint8Array(100_000) }], 0);
  }
  // A segment more after the last of them, so that it is below the tiered floor.
  for (let i = 0; i < 12; i++) await http.produce("kafka", "t", [{ payload: new Uint8Array(100_000) }], 0);
  const ticks = {
    deadlineMs: 60_000,
    pace: virtualTime(s.clock, 20, { settleMs: 2, quietDisk: inFlight, ioWaitMaxMs: 120_000 }),
  };
  const restore = (dryRun: boolean) =>
    s.raw("/admin/restore", {
      method: "POST",
      body: JSON.stringify({ stream: "kafka", topic: "t", as: "t2", dry_run: dryRun }),
    });
  await waitFor("the last batch of producer 40 to be restorable", async () => {
    const plan = await restore(true);
    return plan.status === 200 && (await plan.json()).partitions[0].next_offset > first.at(-1)!;
  }, ticks);

  const restored = await restore(false);
  t.equal(restored.status, 201, JSON.stringify(await restored.clone().json()));
  const next = (await partitionOf("t2")).next_offset;
  t.ok(next > first.at(-1)!, `the restore holds offsets up to ${next}`);
  t.same(
    await produce("t2", idempotentBatch(producerId, 0, 7, 1)),
    { index: 0, errorCode: kafkaErrorCode.none, baseOffset: first[7] },
    "a retry of the last batch, answered with its first offset",
  );
  t.same(
    await produce("t2", idempotentBatch(producerId, 0, 3, 1)),
    { index: 0, errorCode: kafkaErrorCode.none, baseOffset: first[3] },
    "a retry of one of its last five",
  );
  t.equal((await partitionOf("t2")).next_offset, next, "nothing appended twice");
  t.match(
    await produce("t2", idempotentBatch(producerId, 0, 10, 1)),
    { errorCode: kafkaErrorCode.outOfOrderSequenceNumber },
    "a gap after the last batch the restore knows",
  );
  t.same(
    await produce("t2", idempotentBatch(producerId, 0, 8, 1)),
    { index: 0, errorCode: kafkaErrorCode.none, baseOffset: next },
    "the next batch goes on at the next offset",
  );
});
