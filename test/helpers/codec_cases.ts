import t, { type Test } from "tap";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import { KafkaDecodeError, KafkaReader, type KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import { isFlexible, readRequestHeader, type RequestHeader } from "../../src/kafka/wire/frame_codec.ts";
import { kafkaRequest } from "./kafka/kafka_wire.ts";

/**
 * What the wire codecs' tests share (group_codecs.test.ts and group_admin_codecs.test.ts): a codec
 * case per API, and the checks every case goes through.
 */

/**
 * One API's codec under test: `write` writes the request of a version as a client writes it and
 * `request` is what it reads as; `encode` encodes the case's response and `readResponse` reads it
 * back field by field as `response` (`absent` where the version has no such field). kafkajs's
 * encoder, given `args`, writes the same request; its decoder reads the response as `decoded`.
 */
export interface CodecCase {
  name: string;
  api: number;
  min: number;
  max: number;
  read: (version: number, body: KafkaReader) => unknown;
  write: (version: number, w: KafkaWriter) => void;
  request: (version: number) => unknown;
  encode: (header: RequestHeader) => Uint8Array;
  readResponse: (version: number, r: KafkaReader) => unknown;
  response: (version: number) => unknown;
  kafkajs: { api: string; max: number; args: unknown; decoded: (version: number) => unknown };
}

export const absent = "-";
export const header = (api: number, apiVersion: number) => ({
  apiKey: api,
  apiVersion,
  correlationId: 9,
  clientId: "c",
});
export const range = (min: number, max: number) => Array.from({ length: max - min + 1 }, (_, i) => min + i);

/** A request's body as a client writes it: after the size field and the request header. */
export function requestBody(api: number, version: number, write: (w: KafkaWriter) => void): Uint8Array {
  const frame = kafkaRequest(api, version, 1, write);
  return frame.subarray(4 + readRequestHeader(frame.subarray(4)).body.position);
}

/** Bytes as number arrays, and a kafkajs error as its type, so that `t.same` compares by value. */
export function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return [...value];
  if (value instanceof Error) return (value as Error & { type?: string }).type ?? value.name;
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
}

/** CommonJS `require`, for kafkajs's protocol modules. */
export const require = createRequire(import.meta.url);
type KafkajsRequest = (args: unknown) => { encode(): Promise<{ buffer: Uint8Array }> };
type KafkajsDecode = (body: Buffer) => Promise<Record<string, unknown>>;

/** Registers each case's test: every version both ways, kafkajs's versions, and the refusals. */
export function testCases(cases: readonly CodecCase[]): void {
  for (const c of cases) {
    t.test(`${c.name} v${c.min} to v${c.max}`, async (t) => {
      for (const version of range(c.min, c.max)) {
        const body = new KafkaReader(requestBody(c.api, version, (w) => c.write(version, w)));
        t.same(plain(c.read(version, body)), plain(c.request(version)), `v${version}: the request reads`);
        t.equal(body.remaining, 0, `v${version}: the whole request is read`);
        const r = new KafkaReader(c.encode(header(c.api, version)));
        t.equal(r.int32(), 9, "correlation id");
        if (isFlexible(c.api, version)) r.skipTaggedFields();
        t.same(plain(c.readResponse(version, r)), plain(c.response(version)), `v${version}: the response`);
        t.equal(r.remaining, 0, `v${version}: nothing more in the response`);
        if (version <= c.kafkajs.max) await crossCheck(t, c, version);
      }
      refusals(t, c);
    });
  }
}

/** kafkajs's request of `version` reads as the client's does; its decoder reads the response. */
async function crossCheck(t: Test, c: CodecCase, version: number): Promise<void> {
  const at = `kafkajs/src/protocol/requests/${c.kafkajs.api}/v${version}`;
  const request = require(`${at}/request.js`) as KafkajsRequest;
  const body = new KafkaReader(new Uint8Array((await request(c.kafkajs.args).encode()).buffer));
  t.same(plain(c.read(version, body)), plain(c.request(version)), `v${version}: kafkajs's request reads`);
  t.equal(body.remaining, 0, `v${version}: the whole of kafkajs's request is read`);
  const { decode } = require(`${at}/response.js`) as { decode: KafkajsDecode };
  const decoded = await decode(Buffer.from(c.encode(header(c.api, version)).subarray(4)));
  const { throttleTime: _a, clientSideThrottleTime: _b, throttleTimeMs: _c, ...fields } = decoded;
  t.same(plain(fields), plain(c.kafkajs.decoded(version)), `v${version}: kafkajs reads the response`);
}

/** Every cut of the top version's request, and a version either side of the range, are refused. */
function refusals(t: Test, c: CodecCase): void {
  const body = requestBody(c.api, c.max, (w) => c.write(c.max, w));
  const unrefused = range(0, body.length - 1).filter((length) => {
    try {
      c.read(c.max, new KafkaReader(body.subarray(0, length)));
      return true;
    } catch (e) {
      return !(e instanceof KafkaDecodeError);
    }
  });
  t.same(unrefused, [], `every cut of the ${body.length}-byte v${c.max} request throws KafkaDecodeError`);
  for (const version of [c.min - 1, c.max + 1]) {
    t.throws(() => c.read(version, new KafkaReader(body)), KafkaDecodeError, `v${version} is not read`);
    t.throws(() => c.encode(header(c.api, version)), RangeError, `v${version} is not encoded`);
  }
}
