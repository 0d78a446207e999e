import type {
  ReplicaFetchError,
  ReplicaFetchPartitionResponse,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from "../../cluster/replication/replica_fetch.ts";
import { KafkaDecodeError, KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * Strata's ReplicaFetch (API key 10001, version 0), carried on the Kafka listener between the
 * nodes of a cluster and never advertised to clients. Non-flexible encoding, Kafka's primitives:
 *
 *   request:  replica_id int32, token string, max_wait_ms int32, max_bytes int32,
 *             [stream_id int32, topic_id int32, partition int32, leader_epoch int32, fetch_offset int64,
 *              last_fetched_epoch int32]
 *   response: error int16 (0, or 1: credentials refused),
 *             [stream_id int32, topic_id int32, partition int32, error int16, high_watermark int64,
 *              log_start_offset int64, log_end_offset int64, diverging_epoch int32, diverging_end_offset int64,
 *              [segment_start int64], records bytes]   (diverging_epoch -2: none)
 *
 * `token` is the node's credential derived from `[cluster] secret` (`nodeToken`).
 */
export const replicaFetchApiKey = 10001;
export const replicaFetchVersion = 0;

/** `diverging_epoch` when the follower's log agrees with the leader's. */
const noDivergence = -2;

const errorCodes: readonly ReplicaFetchError[] = [
  "none",
  "notLeader",
  "fencedEpoch",
  "unknownEpoch",
  "offsetOutOfRange",
  "storage",
];

export interface ReplicaFetchWireRequest extends ReplicaFetchRequest {
  token: string;
}

export function encodeReplicaFetchRequest(
  correlationId: number,
  request: ReplicaFetchWireRequest,
): Uint8Array {
  const writer = new KafkaWriter(16 * 1024 * 1024, 256 + request.partitions.length * 24);
  writer.int32(0); // the frame's size, set below
  writer.int16(replicaFetchApiKey).int16(replicaFetchVersion).int32(correlationId).nullableString(
    "strata-replica",
  );
  writer.int32(request.replicaId).nullableString(request.token).int32(request.maxWaitMs).int32(
    request.maxBytes,
  );
  writer.array(request.partitions, (w, p) => {
    w.int32(p.address.streamId).int32(p.address.topicId).int32(p.address.partitionId);
    w.int32(p.leaderEpoch).int64(p.fetchOffset).int32(p.lastFetchedEpoch);
  });
  writer.int32At(0, writer.length - 4);
  return writer.bytes();
}

export function readReplicaFetchRequest(body: KafkaReader): ReplicaFetchWireRequest {
  const replicaId = body.int32();
  const token = body.string();
  const maxWaitMs = body.int32();
  const maxBytes = body.int32();
  const partitions = body.array((p) => {
    const address = { streamId: p.int32(), topicId: p.int32(), partitionId: p.int32() };
    return { address, leaderEpoch: p.int32(), fetchOffset: p.int64(), lastFetchedEpoch: p.int32() };
  }, 28);
  if (replicaId < 1 || maxWaitMs < 0 || maxBytes < 1) {
    throw new KafkaDecodeError(
      `a replica fetch of replica ${replicaId}, wait ${maxWaitMs} ms, ${maxBytes} bytes`,
    );
  }
  return { replicaId, token, maxWaitMs, maxBytes, partitions };
}

/** The response to a ReplicaFetch, as pieces: its fields, and each partition's batches uncopied. */
export function encodeReplicaFetchResponse(
  header: RequestHeader,
  response: ReplicaFetchResponse,
): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  let writer = new KafkaWriter(16 * 1024 * 1024, 512);
  writeResponseHeader(writer, header);
  writer.int16(response.error === "none" ? 0 : 1).int32(response.partitions.length);
  for (const p of response.partitions) {
    writer.int32(p.address.streamId).int32(p.address.topicId).int32(p.address.partitionId);
    writer.int16(errorCodes.indexOf(p.error)).int64(p.highWatermark).int64(p.logStartOffset);
    writer.int64(p.logEndOffset);
    writer.int32(p.divergingEpoch?.epoch ?? noDivergence).int64(p.divergingEpoch?.endOffset ?? -1);
    writer.array(p.segmentStarts, (w, offset) => w.int64(offset));
    const recordBytes = p.records.reduce((n, r) => n + r.length, 0);
    writer.int32(recordBytes);
    if (recordBytes === 0) continue;
    pieces.push(writer.bytes(), ...p.records);
    writer = new KafkaWriter(16 * 1024 * 1024, 512);
  }
  if (writer.length > 0) pieces.push(writer.bytes());
  return pieces;
}

/** Reads a response frame (after its size field): its correlation id and body. */
export function readReplicaFetchResponse(
  frame: Uint8Array,
): { correlationId: number; response: ReplicaFetchResponse } {
  const reader = new KafkaReader(frame);
  const correlationId = reader.int32();
  const error = reader.int16() === 0 ? "none" : "authentication";
  const partitions = reader.array((p): ReplicaFetchPartitionResponse => {
    const address = { streamId: p.int32(), topicId: p.int32(), partitionId: p.int32() };
    const code = p.int16();
    const partitionError = errorCodes[code];
    if (partitionError === undefined) throw new KafkaDecodeError(`replica fetch error code ${code}`);
    const highWatermark = p.int64();
    const logStartOffset = p.int64();
    const logEndOffset = p.int64();
    const divergedEpoch = p.int32();
    const divergedEnd = p.int64();
    const segmentStarts = p.array((s) => s.int64(), 8);
    const records = p.nullableBytes();
    return {
      address,
      error: partitionError,
      highWatermark,
      logStartOffset,
      logEndOffset,
      divergingEpoch: divergedEpoch === noDivergence
        ? null
        : { epoch: divergedEpoch, endOffset: divergedEnd },
      segmentStarts,
      records: records === null || records.length === 0 ? [] : [records],
    };
  }, 58);
  return { correlationId, response: { error, partitions } };
}
