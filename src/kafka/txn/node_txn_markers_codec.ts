import { KafkaDecodeError, KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * Strata's NodeTxnMarkers (API key 10002, version 0): a transaction coordinator asks the node that
 * leads some of its transaction's partitions to write their markers (as Kafka's WriteTxnMarkers
 * does between brokers), on the Kafka listener between the nodes of a cluster, never advertised to
 * clients. Non-flexible encoding, Kafka's primitives:
 *
 *   request:  node_id int32, token string, producer_id int64, producer_epoch int16, commit int8,
 *             coordinator_epoch int32, [topic string, partition int32]
 *   response: error int16 (0, or 1: credentials refused), [topic string, partition int32, error int16]
 *
 * `token` is the sending node's credential derived from `[cluster] secret` (`nodeToken`); each
 * partition's error is a Kafka error code, 0 once its marker is written.
 */
export const nodeTxnMarkersApiKey = 10002;
export const nodeTxnMarkersVersion = 0;

export interface NodeTxnMarkersRequest {
  nodeId: number;
  token: string;
  producerId: number;
  epoch: number;
  commit: boolean;
  coordinatorEpoch: number;
  partitions: { topic: string; partition: number }[];
}

export interface NodeTxnMarkersResponse {
  /** The credentials were refused: no marker was written. */
  refused: boolean;
  partitions: { topic: string; partition: number; errorCode: number }[];
}

export function encodeNodeTxnMarkersRequest(
  correlationId: number,
  request: NodeTxnMarkersRequest,
): Uint8Array {
  const writer = new KafkaWriter(16 * 1024 * 1024, 256 + request.partitions.length * 32);
  writer.int32(0); // the frame's size, set below
  writer.int16(nodeTxnMarkersApiKey).int16(nodeTxnMarkersVersion).int32(correlationId).nullableString(
    "strata-txn-markers",
  );
  writer.int32(request.nodeId).nullableString(request.token).int64(request.producerId).int16(request.epoch);
  writer.int8(request.commit ? 1 : 0).int32(request.coordinatorEpoch);
  writer.array(request.partitions, (w, p) => w.nullableString(p.topic).int32(p.partition));
  writer.int32At(0, writer.length - 4);
  return writer.bytes();
}

export function readNodeTxnMarkersRequest(body: KafkaReader): NodeTxnMarkersRequest {
  const nodeId = body.int32();
  const token = body.string();
  const producerId = body.int64();
  const epoch = body.int16();
  const commit = body.int8();
  const coordinatorEpoch = body.int32();
  const partitions = body.array((p) => ({ topic: p.string(), partition: p.int32() }), 6);
  if (nodeId < 1 || producerId < 0 || epoch < 0 || (commit !== 0 && commit !== 1)) {
    throw new KafkaDecodeError(
      `transaction markers of producer ${producerId} at epoch ${epoch} from node ${nodeId}`,
    );
  }
  return { nodeId, token, producerId, epoch, commit: commit === 1, coordinatorEpoch, partitions };
}

/** The whole response (header and body) to a NodeTxnMarkers request with `header`. */
export function encodeNodeTxnMarkersResponse(
  header: RequestHeader,
  response: NodeTxnMarkersResponse,
): Uint8Array {
  const writer = new KafkaWriter(16 * 1024 * 1024, 64 + response.partitions.length * 32);
  writeResponseHeader(writer, header);
  writer.int16(response.refused ? 1 : 0);
  writer.array(
    response.partitions,
    (w, p) => w.nullableString(p.topic).int32(p.partition).int16(p.errorCode),
  );
  return writer.bytes();
}

/** Reads a response frame (after its size field): its correlation id and body. */
export function readNodeTxnMarkersResponse(
  frame: Uint8Array,
): { correlationId: number; response: NodeTxnMarkersResponse } {
  const reader = new KafkaReader(frame);
  const correlationId = reader.int32();
  const refused = reader.int16() !== 0;
  const partitions = reader.array(
    (p) => ({ topic: p.string(), partition: p.int32(), errorCode: p.int16() }),
    8,
  );
  return { correlationId, response: { refused, partitions } };
}
