import {
  encodeAddOffsetsToTxnResponse,
  readAddOffsetsToTxnRequest,
} from "../../src/kafka/txn/add_offsets_to_txn_codec.ts";
import {
  type AddPartitionsToTxnResponse,
  encodeAddPartitionsToTxnResponse,
  readAddPartitionsToTxnRequest,
} from "../../src/kafka/txn/add_partitions_to_txn_codec.ts";
import { encodeEndTxnResponse, readEndTxnRequest } from "../../src/kafka/txn/end_txn_codec.ts";
import type { KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { type CodecCase, testCases } from "../helpers/codec_cases.ts";

/**
 * The wire codecs of a transactional producer's APIs (AddPartitionsToTxn, AddOffsetsToTxn,
 * EndTxn): every version's request as a client writes it reads back, every version's response
 * reads back field by field, kafkajs's encoders' requests read and its decoders read our
 * responses, and a truncated body or a version out of range is refused.
 */

const producer = { transactionalId: "orders-tx", producerId: 4001, producerEpoch: 3 };

/** The transactional id, producer id and epoch every request starts with. */
function writeProducer(version: number, w: KafkaWriter): void {
  if (version >= 3) w.compactNullableString(producer.transactionalId);
  else w.nullableString(producer.transactionalId);
  w.int64(producer.producerId).int16(producer.producerEpoch);
}

const results: AddPartitionsToTxnResponse["results"] = [
  { name: "orders", partitions: [{ partitionIndex: 0, errorCode: 0 }, { partitionIndex: 2, errorCode: 51 }] },
];

const addPartitions: CodecCase = {
  name: "AddPartitionsToTxn",
  api: apiKey.addPartitionsToTxn,
  min: 0,
  max: 3,
  read: readAddPartitionsToTxnRequest,
  write(version, w) {
    writeProducer(version, w);
    if (version < 3) {
      w.array(
        [["orders", [0, 2]]] as const,
        (x, [name, ps]) => x.nullableString(name).array(ps, (y, p) => y.int32(p)),
      );
      return;
    }
    w.compactArray([["orders", [0, 2]]] as const, (x, [name, ps]) => {
      x.compactNullableString(name).compactArray(ps, (y, p) => y.int32(p)).emptyTaggedFields();
    });
    w.emptyTaggedFields();
  },
  request: () => ({ ...producer, topics: [{ name: "orders", partitions: [0, 2] }] }),
  encode: (h) => encodeAddPartitionsToTxnResponse(h, { results }),
  readResponse: (version, r) => {
    const flexible = version >= 3;
    const throttle = r.int32();
    const topics = (flexible ? r.compactArray.bind(r) : r.array.bind(r))((t) => {
      const name = flexible ? t.compactString() : t.string();
      const partitions = (flexible ? t.compactArray.bind(t) : t.array.bind(t))((p) => {
        const row = [p.int32(), p.int16()];
        if (flexible) p.skipTaggedFields();
        return row;
      });
      if (flexible) t.skipTaggedFields();
      return [name, partitions];
    });
    if (flexible) r.skipTaggedFields();
    return [throttle, topics];
  },
  response: () => [0, [["orders", [[0, 0], [2, 51]]]]],
  kafkajs: {
    api: "addPartitionsToTxn",
    max: 1,
    args: { ...producer, topics: [{ topic: "orders", partitions: [0, 2] }] },
    decoded: () => ({
      errors: [{
        topic: "orders",
        partitionErrors: [{ partition: 0, errorCode: 0 }, { partition: 2, errorCode: 51 }],
      }],
    }),
  },
};

const addOffsets: CodecCase = {
  name: "AddOffsetsToTxn",
  api: apiKey.addOffsetsToTxn,
  min: 0,
  max: 3,
  read: readAddOffsetsToTxnRequest,
  write(version, w) {
    writeProducer(version, w);
    if (version >= 3) w.compactNullableString("orders-app").emptyTaggedFields();
    else w.nullableString("orders-app");
  },
  request: () => ({ ...producer, groupId: "orders-app" }),
  encode: (h) => encodeAddOffsetsToTxnResponse(h, { errorCode: 51 }),
  readResponse: (version, r) => {
    const row = [r.int32(), r.int16()];
    if (version >= 3) r.skipTaggedFields();
    return row;
  },
  response: () => [0, 51],
  kafkajs: {
    api: "addOffsetsToTxn",
    max: 1,
    args: { ...producer, groupId: "orders-app" },
    decoded: () => ({ errorCode: 51 }),
  },
};

const endTxn: CodecCase = {
  name: "EndTxn",
  api: apiKey.endTxn,
  min: 0,
  max: 3,
  read: readEndTxnRequest,
  write(version, w) {
    writeProducer(version, w);
    w.boolean(true);
    if (version >= 3) w.emptyTaggedFields();
  },
  request: () => ({ ...producer, committed: true }),
  encode: (h) => encodeEndTxnResponse(h, { errorCode: 48 }),
  readResponse: (version, r) => {
    const row = [r.int32(), r.int16()];
    if (version >= 3) r.skipTaggedFields();
    return row;
  },
  response: () => [0, 48],
  kafkajs: {
    api: "endTxn",
    max: 1,
    args: { ...producer, transactionResult: true },
    decoded: () => ({ errorCode: 48 }),
  },
};

testCases([addPartitions, addOffsets, endTxn]);
