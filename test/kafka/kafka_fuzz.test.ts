import t from "tap";
import { encodeRecordBatch } from "../../src/log/batch/record_batch.ts";
import { decodeBatchHeader, decodeMessages } from "../../src/log/batch/batch_codec.ts";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { openServer } from "../helpers/open_server.ts";
import {
  fetchBody,
  kafkaRequest,
  KafkaWireClient,
  metadataBody,
  produceBody,
  readFetchAnswer,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";

// Seeded malformed, truncated, oversized and unknown frames over several connections, while a
// producer's acknowledged records must all survive; afterwards the server still serves.
const seed = 27;
const connections = 8;
const framesPerConnection = 400;
const maxFrameBytes = 64 * 1024;
const utf8 = new TextEncoder();

/** One hostile frame: each kind breaks the protocol in its own way. */
function hostileFrame(rng: Rng, correlationId: number): Uint8Array {
  const kind = rng.int(0, 5);
  if (kind === 0) return Uint8Array.from({ length: rng.int(1, 200) }, () => rng.int(0, 255));
  if (kind === 1) {
    const frame = new Uint8Array(8);
    new DataView(frame.buffer).setInt32(
      0,
      rng.int(0, 1) === 0 ? maxFrameBytes + rng.int(1, 1 << 20) : -rng.int(1, 1000),
    );
    return frame;
  }
  // A header of a known or unknown API and version, then a body of random bytes.
  const api = [0, 1, 2, 3, 10, 18, 19, 999][rng.int(0, 7)]!;
  const body = Uint8Array.from({ length: rng.int(0, 300) }, () => rng.int(0, 255));
  const frame = kafkaRequest(api, rng.int(-1, 12), correlationId, (w) => w.raw(body));
  if (kind === 3) return frame.subarray(0, rng.int(5, frame.length)); // cut short: the rest never comes
  if (kind === 4) {
    // A size field that claims more than the body: the connection waits, then is closed by the client.
    new DataView(frame.buffer, frame.byteOffset).setInt32(0, frame.length + rng.int(1, 100));
  }
  return frame;
}

t.test("thousands of hostile frames close their connections; the server keeps every acknowledged record", async (t) => {
  const opened = await openServer(t);
  const listener = await openTestListener(t, opened.server, opened.clock, {
    STRATA_KAFKA_MAX_FRAME_BYTES: String(maxFrameBytes),
  });
  const port = listener.address.port;
  const rng = new Rng(seed);

  // The topic, and a producer whose acknowledged records are written down.
  const producer = await KafkaWireClient.connect(port);
  t.teardown(() => producer.close());
  producer.send(kafkaRequest(apiKey.metadata, 4, 1, metadataBody(4, ["fuzzed"])));
  t.ok(await producer.next());
  const acknowledged = new Map<number, string>();
  let correlation = 10;
  const produceOne = async (i: number) => {
    const value = `record-${i}-${rng.int(0, 1e9)}`;
    const batch = encodeRecordBatch([{
      offsetDelta: 0,
      timestampDelta: 0,
      key: null,
      value: utf8.encode(value),
      headers: [],
    }], {
      baseOffset: 0,
      baseTimestampMs: 1_700_000_000_000 + i,
      maxTimestampMs: 1_700_000_000_000 + i,
      timestampType: "create_time",
    });
    producer.send(kafkaRequest(apiKey.produce, 7, correlation++, produceBody("fuzzed", 0, batch)));
    const answer = await producer.next();
    answer!.int32();
    const result = readProduceAnswer(answer!, 7);
    if (result.errorCode === kafkaErrorCode.none) acknowledged.set(result.baseOffset, value);
  };

  let closedByServer = 0;
  let sent = 0;
  const hostile = async (c: number) => {
    let client = await KafkaWireClient.connect(port);
    for (let i = 0; i < framesPerConnection; i++) {
      client.send(hostileFrame(rng, c * 100_000 + i));
      sent++;
      if (i % 4 === 3) {
        // Every fourth frame, a fresh connection: the old one is closed by the server or by us.
        client.close();
        client = await KafkaWireClient.connect(port);
      }
    }
    client.close();
  };
  const producing = (async () => {
    for (let i = 0; i < 200; i++) await produceOne(i);
  })();
  await Promise.all([...Array.from({ length: connections }, (_, c) => hostile(c)), producing]);
  const closed = await opened.server.registry.getSingleMetricAsString(
    "strata_kafka_connections_closed_total",
  );
  for (const match of closed.matchAll(/\} (\d+)$/gm)) closedByServer += Number(match[1]);
  t.equal(sent, connections * framesPerConnection, `${sent} hostile frames sent`);
  const connectionsOpened = connections * (framesPerConnection / 4);
  t.ok(
    closedByServer >= connectionsOpened / 2,
    `the server closed ${closedByServer} of ${connectionsOpened} connections for bad input`,
  );
  t.equal(acknowledged.size, 200, "every produce beside the hostile frames was acknowledged");

  // The server still answers, and every acknowledged record reads back.
  const after = await KafkaWireClient.connect(port);
  t.teardown(() => after.close());
  after.send(
    kafkaRequest(
      apiKey.apiVersions,
      3,
      1,
      (w) => w.compactNullableString("t").compactNullableString("1").emptyTaggedFields(),
    ),
  );
  const versions = (await after.next())!;
  t.equal(versions.int32(), 1);
  t.equal(versions.int16(), kafkaErrorCode.none, "ApiVersions answers");
  const read = new Map<number, string>();
  for (let offset = 0, round = 0; offset < 200 && round < 100; round++) {
    after.send(kafkaRequest(apiKey.fetch, 11, 100 + round, fetchBody("fuzzed", 0, offset)));
    const answer = (await after.next())!;
    answer.int32();
    const { records, errorCode } = readFetchAnswer(answer);
    t.equal(errorCode, 0);
    for (let at = 0; at < records.length;) {
      const size = decodeBatchHeader(records, at)!.lengthBytes;
      for (const m of decodeMessages(records.subarray(at, at + size))) {
        read.set(m.offset, new TextDecoder().decode(m.payload!));
        offset = m.offset + 1;
      }
      at += size;
    }
  }
  t.same(
    [...read.entries()].sort((a, b) => a[0] - b[0]),
    [...acknowledged.entries()].sort((a, b) => a[0] - b[0]),
    "nothing acknowledged is lost or changed",
  );
});
