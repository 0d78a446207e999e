import t from "tap";
import {
  encodeApiVersionsResponse,
  readApiVersionsRequest,
} from "../../../src/kafka/apis/api_versions_codec.ts";
import { kafkaErrorCode } from "../../../src/kafka/kafka_errors.ts";
import { KafkaDecodeError, KafkaReader, KafkaWriter } from "../../../src/kafka/wire/kafka_codec.ts";
import { apiKey, isFlexible, readRequestHeader } from "../../../src/kafka/wire/frame_codec.ts";

const ranges = [
  { apiKey: apiKey.apiVersions, minVersion: 0, maxVersion: 3 },
  { apiKey: apiKey.metadata, minVersion: 0, maxVersion: 8 },
];

/** A request frame (without its size) as a client writes it. */
function request(version: number, body: (w: KafkaWriter) => void): Uint8Array {
  const w = new KafkaWriter(1024);
  w.int16(apiKey.apiVersions).int16(version).int32(77).nullableString("rdkafka");
  if (isFlexible(apiKey.apiVersions, version)) w.emptyTaggedFields();
  body(w);
  return w.bytes().slice();
}

t.test("ApiVersions v0 and v3 requests read, and their responses carry the ranges", (t) => {
  const v0 = readRequestHeader(request(0, () => {}));
  t.same(v0.header, { apiKey: 18, apiVersion: 0, correlationId: 77, clientId: "rdkafka" });
  t.same(readApiVersionsRequest(0, v0.body), { clientSoftwareName: null, clientSoftwareVersion: null });
  const answer0 = new KafkaReader(encodeApiVersionsResponse(v0.header, ranges));
  t.equal(answer0.int32(), 77, "correlation id");
  t.equal(answer0.int16(), kafkaErrorCode.none);
  t.same(answer0.array((r) => [r.int16(), r.int16(), r.int16()]), [[18, 0, 3], [3, 0, 8]]);
  t.equal(answer0.remaining, 0, "v0 has no throttle time");

  const v3 = readRequestHeader(
    request(
      3,
      (w) => w.compactNullableString("librdkafka").compactNullableString("2.0.2").emptyTaggedFields(),
    ),
  );
  t.same(readApiVersionsRequest(3, v3.body), {
    clientSoftwareName: "librdkafka",
    clientSoftwareVersion: "2.0.2",
  });
  const answer3 = new KafkaReader(encodeApiVersionsResponse(v3.header, ranges));
  t.equal(answer3.int32(), 77, "a v0 response header: no tagged fields after the correlation id");
  t.equal(answer3.int16(), kafkaErrorCode.none);
  const read = answer3.compactArray((r) => {
    const range = [r.int16(), r.int16(), r.int16()];
    r.skipTaggedFields();
    return range;
  });
  t.same(read, [[18, 0, 3], [3, 0, 8]]);
  t.equal(answer3.int32(), 0, "throttle time");
  answer3.skipTaggedFields();
  t.equal(answer3.remaining, 0);
  t.end();
});

t.test("a version past the newest is answered in v0 with UNSUPPORTED_VERSION and the ranges", (t) => {
  const { header } = readRequestHeader(request(9, () => {}));
  const answer = new KafkaReader(encodeApiVersionsResponse(header, ranges));
  t.equal(answer.int32(), 77);
  t.equal(answer.int16(), kafkaErrorCode.unsupportedVersion);
  t.equal(answer.array((r) => [r.int16(), r.int16(), r.int16()]).length, 2);
  t.end();
});

t.test("truncated and malformed headers are decode errors, never reads past the frame", (t) => {
  const whole = request(
    3,
    (w) => w.compactNullableString("x").compactNullableString("y").emptyTaggedFields(),
  );
  for (let length = 0; length < 11; length++) {
    t.throws(() => readRequestHeader(whole.subarray(0, length)), KafkaDecodeError, `cut at ${length} bytes`);
  }
  const negative = new KafkaWriter(64).int16(18).int16(-1).int32(1).nullableString(null).bytes();
  t.throws(() => readRequestHeader(negative), /api version -1/);
  const badLength = new KafkaWriter(64).int16(18).int16(0).int32(1).int16(-5).bytes();
  t.throws(() => readRequestHeader(badLength), /a length of -5/);
  const hugeArray = new KafkaReader(new KafkaWriter(64).int32(1_000_000).bytes());
  t.throws(
    () => hugeArray.array((r) => r.int32(), 4),
    /1000000 items in 0 bytes/,
    "refused before allocating",
  );
  t.end();
});
