import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * InitProducerId (key 22), versions 0 to 4: a producer id and epoch for an idempotent or
 * transactional producer. v2 is the first flexible version (compact strings, tagged fields); v3 adds
 * the producer's current id and epoch to the request (KIP-360); v4 lets the answer be
 * PRODUCER_FENCED. The response's fields are the same in every version.
 */

export const initProducerIdVersionMin = 0;
export const initProducerIdVersionMax = 4;

export interface InitProducerIdRequest {
  /** The transactional id; null for an idempotent producer without transactions. */
  transactionalId: string | null;
  transactionTimeoutMs: number;
  /** The producer's current id and epoch (v3 on), or -1 and -1 for none. */
  producerId: number;
  producerEpoch: number;
}

export interface InitProducerIdResponse {
  errorCode: number;
  /** The producer's id, or -1 with an error. */
  producerId: number;
  /** The producer's epoch, or -1 with an error. */
  producerEpoch: number;
}

/** Reads the body of an InitProducerId request of a version served. */
export function readInitProducerIdRequest(version: number, body: KafkaReader): InitProducerIdRequest {
  if (version < initProducerIdVersionMin || version > initProducerIdVersionMax) {
    throw new KafkaDecodeError(`InitProducerId v${version} is not read here`);
  }
  const flexible = version >= 2;
  const transactionalId = flexible ? body.compactNullableString() : body.nullableString();
  const transactionTimeoutMs = body.int32();
  const producerId = version >= 3 ? body.int64() : -1;
  const producerEpoch = version >= 3 ? body.int16() : -1;
  if (flexible) body.skipTaggedFields();
  return { transactionalId, transactionTimeoutMs, producerId, producerEpoch };
}

/** The whole response (header and body) to an InitProducerId request with `header`. */
export function encodeInitProducerIdResponse(
  header: RequestHeader,
  response: InitProducerIdResponse,
): Uint8Array {
  const version = header.apiVersion;
  if (version < initProducerIdVersionMin || version > initProducerIdVersionMax) {
    throw new RangeError(`Cannot encode an InitProducerId v${version} response: it is not served`);
  }
  const writer = new KafkaWriter(64, 64);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.initProducerId });
  writer.int32(0).int16(response.errorCode).int64(response.producerId).int16(response.producerEpoch);
  if (version >= 2) writer.emptyTaggedFields();
  return writer.bytes();
}
