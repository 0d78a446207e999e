import type { KafkaApi } from "../kafka_api.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/** The one mechanism served. */
export const plainMechanism = "PLAIN";

/**
 * SaslHandshake 0 to 1: the client names its mechanism; PLAIN is the one served (any other is
 * answered UNSUPPORTED_SASL_MECHANISM with the list). Version 0, after which a client sends raw SASL
 * frames instead of SaslAuthenticate requests, is advertised (librdkafka looks for it) but answered
 * UNSUPPORTED_VERSION: every client since Kafka 1.0 uses version 1.
 * The session (`KafkaRequestSession`) keeps the connection's state; this only answers.
 */
export const saslHandshakeApi: KafkaApi = {
  apiKey: apiKey.saslHandshake,
  name: "sasl_handshake",
  minVersion: 0,
  maxVersion: 1,
  handle(header, body, serving) {
    const offered = serving.users.size > 0;
    const served = body.string() === plainMechanism && offered;
    return Promise.resolve({
      pieces: [encodeSaslHandshakeResponse(header, served, offered)],
      errorCount: served ? 0 : 1,
    });
  },
};

/** A SaslHandshake's answer: PLAIN when users are set (none otherwise), and whether the one asked for is it. */
export function encodeSaslHandshakeResponse(
  header: RequestHeader,
  served: boolean,
  offered: boolean,
  refusal: number = kafkaErrorCode.unsupportedSaslMechanism,
): Uint8Array {
  const writer = new KafkaWriter(256);
  writeResponseHeader(writer, header);
  writer.int16(served ? kafkaErrorCode.none : refusal);
  writer.array(offered ? [plainMechanism] : [], (w, m) => w.nullableString(m));
  return writer.bytes();
}

/** The bytes of a SaslAuthenticate request (versions 0 to 2; 2 is flexible). */
export function readSaslAuthenticate(
  version: number,
  body: KafkaReader,
): Uint8Array {
  if (version < 0 || version > 2) throw new KafkaDecodeError(`SaslAuthenticate v${version} is not read here`);
  const bytes = version >= 2 ? body.compactNullableBytes() : body.nullableBytes();
  if (version >= 2) body.skipTaggedFields();
  if (bytes === null) throw new KafkaDecodeError("SaslAuthenticate carries no bytes");
  return bytes;
}

/** The whole SaslAuthenticate response: an error code and message, no server bytes, no session expiry. */
export function encodeSaslAuthenticateResponse(
  header: RequestHeader,
  errorCode: number,
  message: string | null,
): Uint8Array {
  const version = header.apiVersion;
  const writer = new KafkaWriter(512);
  writeResponseHeader(writer, header);
  writer.int16(errorCode);
  if (version >= 2) writer.compactNullableString(message).compactNullableBytes(new Uint8Array(0));
  else writer.nullableString(message).nullableBytes(new Uint8Array(0));
  if (version >= 1) writer.int64(0);
  if (version >= 2) writer.emptyTaggedFields();
  return writer.bytes();
}

/**
 * SaslAuthenticate 0 to 2: the PLAIN message after a PLAIN handshake. The session answers it
 * (`SaslGate.authenticate`); this entry gives the versions served.
 */
export const saslAuthenticateApi: KafkaApi = {
  apiKey: apiKey.saslAuthenticate,
  name: "sasl_authenticate",
  minVersion: 0,
  maxVersion: 2,
  handle(header) {
    throw new KafkaDecodeError(`SaslAuthenticate v${header.apiVersion} reached no session`);
  },
};
