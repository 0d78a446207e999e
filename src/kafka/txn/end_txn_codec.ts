import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * EndTxn (key 26), versions 0 to 3: a transactional producer commits or aborts its transaction. v2
 * lets the answer be PRODUCER_FENCED; v3 is the first flexible version (compact strings, tagged
 * fields). The fields are the same in every version.
 */

export const endTxnVersionMin = 0;
export const endTxnVersionMax = 3;

export interface EndTxnRequest {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  /** True to commit, false to abort. */
  committed: boolean;
}

export interface EndTxnResponse {
  errorCode: number;
}

/** Reads the body of an EndTxn request of a version served. */
export function readEndTxnRequest(version: number, body: KafkaReader): EndTxnRequest {
  if (version < endTxnVersionMin || version > endTxnVersionMax) {
    throw new KafkaDecodeError(`EndTxn v${version} is not read here`);
  }
  const flexible = version >= 3;
  const transactionalId = flexible ? body.compactString() : body.string();
  const producerId = body.int64();
  const producerEpoch = body.int16();
  const committed = body.boolean();
  if (flexible) body.skipTaggedFields();
  return { transactionalId, producerId, producerEpoch, committed };
}

/** The whole response (header and body) to an EndTxn request with `header`. */
export function encodeEndTxnResponse(header: RequestHeader, response: EndTxnResponse): Uint8Array {
  const version = header.apiVersion;
  if (version < endTxnVersionMin || version > endTxnVersionMax) {
    throw new RangeError(`Cannot encode an EndTxn v${version} response: it is not served`);
  }
  const writer = new KafkaWriter(32, 32);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.endTxn });
  writer.int32(0).int16(response.errorCode);
  if (version >= 3) writer.emptyTaggedFields();
  return writer.bytes();
}
