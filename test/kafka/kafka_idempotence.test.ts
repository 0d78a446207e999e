import t, { type Test } from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import type { KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import { openServer } from "../helpers/open_server.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import {
  kafkaRequest,
  KafkaWireClient,
  produceBody,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";
import { idempotentBatch } from "../helpers/kafka/idempotent_batch.ts";

// Idempotent producers over the wire, in process: InitProducerId gives ids, and a partition
// answers a producer's retries with the offsets they were first given, appending nothing twice.

async function openKafka(t: Test) {
  const opened = await openServer(t);
  const listener = await openTestListener(t, opened.server, opened.clock);
  const kafka = await KafkaWireClient.connect(listener.address.port);
  t.teardown(() => kafka.close());
  let correlation = 0;
  const ask = async (key: number, version: number, body: (w: KafkaWriter) => void) => {
    kafka.send(kafkaRequest(key, version, ++correlation, body));
    const reader = (await kafka.next())!;
    t.equal(reader.int32(), correlation, "answers in order");
    return reader;
  };
  return { ...opened, ask };
}

function initBody(version: number, transactionalId: string | null, producerId = -1, epoch = -1) {
  return (w: KafkaWriter) => {
    if (version >= 2) w.compactNullableString(transactionalId);
    else w.nullableString(transactionalId);
    w.int32(60_000);
    if (version >= 3) w.int64(producerId).int16(epoch);
    if (version >= 2) w.emptyTaggedFields();
  };
}

t.test("InitProducerId gives each idempotent producer an id of its own, at epoch 0", async (t) => {
  const { ask } = await openKafka(t);
  const ids: number[] = [];
  for (const version of [0, 1, 2, 3, 4]) {
    const r = await ask(
      apiKey.initProducerId,
      version,
      initBody(version, null, version === 4 ? 5 : -1, version === 4 ? 0 : -1),
    );
    if (version >= 2) r.skipTaggedFields();
    r.int32();
    t.equal(r.int16(), kafkaErrorCode.none, `v${version}`);
    ids.push(r.int64());
    t.equal(r.int16(), 0, "epoch 0");
  }
  t.equal(new Set(ids).size, 5, `five different ids: ${ids}`);
  const refusals: [(w: KafkaWriter) => void, number, string][] = [
    [initBody(3, null, 5, -1), kafkaErrorCode.invalidRequest, "an id without an epoch"],
    [initBody(3, "", -1, -1), kafkaErrorCode.invalidRequest, "an empty transactional id"],
    [initBody(3, "tx", -1, -1), kafkaErrorCode.coordinatorNotAvailable, "a transactional id"],
  ];
  for (const [body, code, what] of refusals) {
    const r = await ask(apiKey.initProducerId, 3, body);
    r.skipTaggedFields();
    r.int32();
    t.equal(r.int16(), code, what);
    t.same([r.int64(), r.int16()], [-1, -1]);
  }
});

t.test("a retried batch is answered with its first offset and appended once; gaps and old epochs are refused", async (t) => {
  const { ask, client } = await openKafka(t);
  const http = client();
  await http.createStream("kafka");
  await http.createTopic("kafka", { name: "idem", partitions: 1 });
  const produce = async (batch: Uint8Array) => {
    const r = await ask(apiKey.produce, 7, produceBody("idem", 0, batch));
    return readProduceAnswer(r, 7);
  };
  const nextOffset = async () =>
    ((await http.partition("kafka", "idem", 0)) as { next_offset: number }).next_offset;
  t.match(await produce(idempotentBatch(40, 0, 0, 3)), { errorCode: 0, baseOffset: 0 });
  t.match(await produce(idempotentBatch(40, 0, 3, 2)), { errorCode: 0, baseOffset: 3 });
  t.match(
    await produce(idempotentBatch(40, 0, 0, 3)),
    { errorCode: 0, baseOffset: 0 },
    "a retry of the first",
  );
  t.match(
    await produce(idempotentBatch(40, 0, 3, 2)),
    { errorCode: 0, baseOffset: 3 },
    "a retry of the last",
  );
  t.equal(await nextOffset(), 5, "nothing appended twice");
  t.match(await produce(idempotentBatch(40, 0, 9, 1)), {
    errorCode: kafkaErrorCode.outOfOrderSequenceNumber,
  });
  t.match(
    await produce(idempotentBatch(41, 3, 77, 1)),
    { errorCode: 0, baseOffset: 5 },
    "a new producer at any sequence",
  );
  t.match(
    await produce(idempotentBatch(40, 1, 4, 1)),
    { errorCode: kafkaErrorCode.outOfOrderSequenceNumber },
    "a new epoch not at 0",
  );
  t.match(await produce(idempotentBatch(40, 1, 0, 1)), { errorCode: 0, baseOffset: 6 }, "a new epoch at 0");
  t.match(await produce(idempotentBatch(40, 0, 5, 1)), { errorCode: kafkaErrorCode.invalidProducerEpoch });
  t.match(
    await produce(idempotentBatch(40, -1, 5, 1)),
    { errorCode: kafkaErrorCode.corruptMessage },
    "an id without an epoch",
  );
  t.equal(await nextOffset(), 7);
  const metrics = await http.metrics();
  t.match(metrics, /^strata_producer_duplicates_total 2$/m);
  t.match(metrics, /^strata_producer_refusals_total\{reason="out_of_order"\} 2$/m);
  t.match(metrics, /^strata_producer_refusals_total\{reason="old_epoch"\} 1$/m);
  t.match(metrics, /^strata_partition_producers\{partition="\d+\/\d+\/0"\} 2$/m, "producers 40 and 41");
});

t.test("DescribeProducers and the HTTP API show each partition's producers", async (t) => {
  const { ask, client, server } = await openKafka(t);
  const http = client();
  await http.createStream("kafka");
  await http.createTopic("kafka", { name: "idem", partitions: 2 });
  for (const [producerId, count] of [[60, 3], [61, 1]] as const) {
    const r = await ask(apiKey.produce, 7, produceBody("idem", 0, idempotentBatch(producerId, 2, 10, count)));
    t.equal(readProduceAnswer(r, 7).errorCode, 0);
  }
  // A producer partition 1 knows by a transaction marker alone (its coordinator aborted it there).
  const timestamp = 1_700_000_000_000;
  await server.dataPlane.writeTxnMarker("kafka", "idem", 1, {
    producerId: 62,
    epoch: 4,
    commit: false,
    coordinatorEpoch: 3,
    timestampMs: timestamp,
  });
  const r = await ask(apiKey.describeProducers, 0, (w) => {
    w.compactArray([["idem", [0, 1, 7]], ["nope", [0]]] as const, (tw, [name, partitions]) => {
      tw.compactNullableString(name).compactArray(partitions, (pw, p) => pw.int32(p)).emptyTaggedFields();
    }).emptyTaggedFields();
  });
  r.skipTaggedFields();
  t.equal(r.int32(), 0, "throttle");
  const topics = r.compactArray((tr) => {
    const name = tr.compactString();
    const partitions = tr.compactArray((pr) => {
      const answer = {
        index: pr.int32(),
        errorCode: pr.int16(),
        message: pr.compactNullableString(),
        producers: pr.compactArray((ar) => {
          const producer = [ar.int64(), ar.int32(), ar.int32(), ar.int64(), ar.int32(), ar.int64()];
          ar.skipTaggedFields();
          return producer;
        }),
      };
      pr.skipTaggedFields();
      return answer;
    });
    tr.skipTaggedFields();
    return { name, partitions };
  });
  t.same(topics, [
    {
      name: "idem",
      partitions: [
        {
          index: 0,
          errorCode: 0,
          message: null,
          producers: [[60, 2, 12, timestamp, -1, -1], [61, 2, 10, timestamp, -1, -1]],
        },
        { index: 1, errorCode: 0, message: null, producers: [[62, 4, -1, timestamp, 3, -1]] },
        { index: 7, errorCode: kafkaErrorCode.unknownTopicOrPartition, message: null, producers: [] },
      ],
    },
    {
      name: "nope",
      partitions: [{
        index: 0,
        errorCode: kafkaErrorCode.unknownTopicOrPartition,
        message: null,
        producers: [],
      }],
    },
  ]);
  t.same(await http.producers("kafka", "idem", 0), {
    producers: [
      {
        producer_id: 60,
        epoch: 2,
        last_sequence: 12,
        last_offset: 2,
        last_timestamp_ms: timestamp,
        batches_kept: 1,
        transaction_first_offset: null,
        coordinator_epoch: null,
      },
      {
        producer_id: 61,
        epoch: 2,
        last_sequence: 10,
        last_offset: 3,
        last_timestamp_ms: timestamp,
        batches_kept: 1,
        transaction_first_offset: null,
        coordinator_epoch: null,
      },
    ],
  });
  t.same(await http.producers("kafka", "idem", 1), {
    producers: [{
      producer_id: 62,
      epoch: 4,
      last_sequence: null,
      last_offset: null,
      last_timestamp_ms: timestamp,
      batches_kept: 0,
      transaction_first_offset: null,
      coordinator_epoch: 3,
    }],
  }, "a producer known by its marker alone");
});
