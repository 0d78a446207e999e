import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * AddPartitionsToTxn (key 24), versions 0 to 3 (the client's; v4 is Kafka's broker-to-broker
 * form): a transactional producer adds partitions to its transaction before it produces to them.
 * v2 lets the answer be PRODUCER_FENCED; v3 is the first flexible version (compact strings and
 * arrays, tagged fields). The answer has an error per partition.
 */

export const addPartitionsToTxnVersionMin = 0;
export const addPartitionsToTxnVersionMax = 3;

export interface AddPartitionsToTxnRequest {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  topics: { name: string; partitions: number[] }[];
}

export interface AddPartitionsToTxnResponse {
  results: { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[];
}

/** Reads the body of an AddPartitionsToTxn request of a version served. */
export function readAddPartitionsToTxnRequest(version: number, body: KafkaReader): AddPartitionsToTxnRequest {
  if (version < addPartitionsToTxnVersionMin || version > addPartitionsToTxnVersionMax) {
    throw new KafkaDecodeError(`AddPartitionsToTxn v${version} is not read here`);
  }
  const flexible = version >= 3;
  const transactionalId = flexible ? body.compactString() : body.string();
  const producerId = body.int64();
  const producerEpoch = body.int16();
  const topic = (r: KafkaReader) => {
    const name = flexible ? r.compactString() : r.string();
    const partitions = flexible ? r.compactArray((p) => p.int32(), 4) : r.array((p) => p.int32(), 4);
    if (flexible) r.skipTaggedFields();
    return { name, partitions };
  };
  const topics = flexible ? body.compactArray(topic, 2) : body.array(topic, 6);
  if (flexible) body.skipTaggedFields();
  return { transactionalId, producerId, producerEpoch, topics };
}

/** The whole response (header and body) to an AddPartitionsToTxn request with `header`. */
export function encodeAddPartitionsToTxnResponse(
  header: RequestHeader,
  response: AddPartitionsToTxnResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < addPartitionsToTxnVersionMin || version > addPartitionsToTxnVersionMax) {
    throw new RangeError(`Cannot encode an AddPartitionsToTxn v${version} response: it is not served`);
  }
  const flexible = version >= 3;
  const writer = new KafkaWriter(128, 128);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.addPartitionsToTxn });
  writer.int32(0);
  const partition = (w: KafkaWriter, p: { partitionIndex: number; errorCode: number }) => {
    w.int32(p.partitionIndex).int16(p.errorCode);
    if (flexible) w.emptyTaggedFields();
  };
  const topic = (w: KafkaWriter, t: AddPartitionsToTxnResponse["results"][number]) => {
    if (flexible) w.compactNullableString(t.name).compactArray(t.partitions, partition).emptyTaggedFields();
    else w.nullableString(t.name).array(t.partitions, partition);
  };
  if (flexible) writer.compactArray(response.results, topic).emptyTaggedFields();
  else writer.array(response.results, topic);
  return writer.bytes();
}
