import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * TxnOffsetCommit (key 28), versions 0 to 3: a transactional producer commits a group's offsets in
 * its transaction. v2 adds each offset's leader epoch; v3 is the first flexible version and adds the
 * group member (generation, member id, group instance id).
 */

export const txnOffsetCommitVersionMin = 0;
export const txnOffsetCommitVersionMax = 3;

export interface TxnOffsetCommitPartition {
  partitionIndex: number;
  committedOffset: number;
  /** -1 before v2. */
  committedLeaderEpoch: number;
  committedMetadata: string | null;
}

export interface TxnOffsetCommitRequest {
  transactionalId: string;
  groupId: string;
  producerId: number;
  producerEpoch: number;
  /** v3 on; -1, "" and null before. */
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  topics: { name: string; partitions: TxnOffsetCommitPartition[] }[];
}

export interface TxnOffsetCommitResponse {
  topics: { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[];
}

/** Reads the body of a TxnOffsetCommit request of a version served. */
export function readTxnOffsetCommitRequest(version: number, body: KafkaReader): TxnOffsetCommitRequest {
  if (version < txnOffsetCommitVersionMin || version > txnOffsetCommitVersionMax) {
    throw new KafkaDecodeError(`TxnOffsetCommit v${version} is not read here`);
  }
  const flexible = version >= 3;
  const text = (r: KafkaReader) => flexible ? r.compactString() : r.string();
  const transactionalId = text(body);
  const groupId = text(body);
  const producerId = body.int64();
  const producerEpoch = body.int16();
  const generationId = version >= 3 ? body.int32() : -1;
  const memberId = version >= 3 ? body.compactString() : "";
  const groupInstanceId = version >= 3 ? body.compactNullableString() : null;
  const partition = (r: KafkaReader): TxnOffsetCommitPartition => {
    const partitionIndex = r.int32();
    const committedOffset = r.int64();
    const committedLeaderEpoch = version >= 2 ? r.int32() : -1;
    const committedMetadata = flexible ? r.compactNullableString() : r.nullableString();
    if (flexible) r.skipTaggedFields();
    return { partitionIndex, committedOffset, committedLeaderEpoch, committedMetadata };
  };
  const topic = (r: KafkaReader) => {
    const name = text(r);
    const partitions = flexible ? r.compactArray(partition, 14) : r.array(partition, 14);
    if (flexible) r.skipTaggedFields();
    return { name, partitions };
  };
  const topics = flexible ? body.compactArray(topic, 2) : body.array(topic, 6);
  if (flexible) body.skipTaggedFields();
  return {
    transactionalId,
    groupId,
    producerId,
    producerEpoch,
    generationId,
    memberId,
    groupInstanceId,
    topics,
  };
}

/** The whole response (header and body) to a TxnOffsetCommit request with `header`. */
export function encodeTxnOffsetCommitResponse(
  header: RequestHeader,
  response: TxnOffsetCommitResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < txnOffsetCommitVersionMin || version > txnOffsetCommitVersionMax) {
    throw new RangeError(`Cannot encode a TxnOffsetCommit v${version} response: it is not served`);
  }
  const flexible = version >= 3;
  const writer = new KafkaWriter(128, 128);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.txnOffsetCommit });
  writer.int32(0);
  const partition = (w: KafkaWriter, p: { partitionIndex: number; errorCode: number }) => {
    w.int32(p.partitionIndex).int16(p.errorCode);
    if (flexible) w.emptyTaggedFields();
  };
  const topic = (w: KafkaWriter, t: TxnOffsetCommitResponse["topics"][number]) => {
    if (flexible) w.compactNullableString(t.name).compactArray(t.partitions, partition).emptyTaggedFields();
    else w.nullableString(t.name).array(t.partitions, partition);
  };
  if (flexible) writer.compactArray(response.topics, topic).emptyTaggedFields();
  else writer.array(response.topics, topic);
  return writer.bytes();
}
