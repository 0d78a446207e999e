import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * AddOffsetsToTxn (key 25), versions 0 to 3: a transactional producer adds a group's offsets to its
 * transaction (the group's partition of `__consumer_offsets` joins it), before TxnOffsetCommit. v2
 * lets the answer be PRODUCER_FENCED; v3 is the first flexible version. The fields are the same in
 * every version.
 */

export const addOffsetsToTxnVersionMin = 0;
export const addOffsetsToTxnVersionMax = 3;

export interface AddOffsetsToTxnRequest {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  groupId: string;
}

export interface AddOffsetsToTxnResponse {
  errorCode: number;
}

/** Reads the body of an AddOffsetsToTxn request of a version served. */
export function readAddOffsetsToTxnRequest(version: number, body: KafkaReader): AddOffsetsToTxnRequest {
  if (version < addOffsetsToTxnVersionMin || version > addOffsetsToTxnVersionMax) {
    throw new KafkaDecodeError(`AddOffsetsToTxn v${version} is not read here`);
  }
  const flexible = version >= 3;
  const transactionalId = flexible ? body.compactString() : body.string();
  const producerId = body.int64();
  const producerEpoch = body.int16();
  const groupId = flexible ? body.compactString() : body.string();
  if (flexible) body.skipTaggedFields();
  return { transactionalId, producerId, producerEpoch, groupId };
}

/** The whole response (header and body) to an AddOffsetsToTxn request with `header`. */
export function encodeAddOffsetsToTxnResponse(
  header: RequestHeader,
  response: AddOffsetsToTxnResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < addOffsetsToTxnVersionMin || version > addOffsetsToTxnVersionMax) {
    throw new RangeError(`Cannot encode an AddOffsetsToTxn v${version} response: it is not served`);
  }
  const writer = new KafkaWriter(32, 32);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.addOffsetsToTxn });
  writer.int32(0).int16(response.errorCode);
  if (version >= 3) writer.emptyTaggedFields();
  return writer.bytes();
}
