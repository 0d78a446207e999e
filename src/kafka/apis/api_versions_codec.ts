import { kafkaErrorCode } from "../kafka_errors.ts";
import { type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * ApiVersions (key 18): how a client learns which versions of each API a server answers. Versions
 * 0 to 2 have an empty body; version 3, the first flexible one, carries the client's software name
 * and version. The response is the error code, the ranges, and from version 1 a throttle time; from
 * version 3 in compact form with tagged fields. A request for a version past the newest served is
 * answered in version 0 with UNSUPPORTED_VERSION and the ranges, as Kafka answers it, so that the
 * client can retry with one it finds there.
 */

/** One API a server answers, from `minVersion` to `maxVersion` inclusive. */
export interface ApiVersionRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}

/** The versions of ApiVersions itself whose request and response are read and written here. */
export const apiVersionsVersionMax = 3;

/** Bound on a response's bytes: a few dozen APIs take a few hundred bytes. */
const responseBytesMax = 64 * 1024;

export interface ApiVersionsRequest {
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
}

/** Reads the body of a request of a version served (0 to 3). */
export function readApiVersionsRequest(version: number, body: KafkaReader): ApiVersionsRequest {
  if (version < 3) return { clientSoftwareName: null, clientSoftwareVersion: null };
  const clientSoftwareName = body.compactString();
  const clientSoftwareVersion = body.compactString();
  body.skipTaggedFields();
  return { clientSoftwareName, clientSoftwareVersion };
}

/**
 * The whole response (header and body, without the frame's size) to a request with `header`, whose
 * version may be past what is served; `ranges` are the APIs the server answers.
 */
export function encodeApiVersionsResponse(
  header: RequestHeader,
  ranges: readonly ApiVersionRange[],
): Uint8Array {
  const served = header.apiVersion <= apiVersionsVersionMax;
  const version = served ? header.apiVersion : 0;
  const writer = new KafkaWriter(responseBytesMax);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.apiVersions, apiVersion: version });
  writer.int16(served ? kafkaErrorCode.none : kafkaErrorCode.unsupportedVersion);
  const range = (w: KafkaWriter, r: ApiVersionRange) => {
    w.int16(r.apiKey).int16(r.minVersion).int16(r.maxVersion);
    if (version >= 3) w.emptyTaggedFields();
  };
  if (version >= 3) writer.compactArray(ranges, range);
  else writer.array(ranges, range);
  if (version >= 1) writer.int32(0);
  if (version >= 3) writer.emptyTaggedFields();
  return writer.bytes();
}
