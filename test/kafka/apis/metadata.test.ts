import t from "tap";
import { hexBytes } from "../../helpers/hex_bytes.ts";
import { KafkaReader, KafkaWriter } from "../../../src/kafka/wire/kafka_codec.ts";
import {
  encodeMetadataResponse,
  type MetadataResponse,
  readMetadataRequest,
} from "../../../src/kafka/apis/metadata_codec.ts";
import { apiKey } from "../../../src/kafka/wire/frame_codec.ts";

// A Kafka broker's Metadata v5 answer after its correlation id (kafkajs's fixture "v5_response").
const brokerV5 = hexBytes(`
  000000000000000300000002000b31302e332e3232302e38390000238affff00000001000b31302e332e3232302e3839
  00002387ffff00000000000b31302e332e3232302e383900002384ffff001677794f456b306d37546e2d30386f475a6a
  745667456700000002000000010000004a746573742d746f7069632d6635653137613836383936656266646562343239
  2d38303832392d61333762366464652d316164632d343638372d383133642d3532643735613061306637380000000001
  000000000000000000000000000100000000000000010000000000000000
`);

const cluster: MetadataResponse = {
  brokers: [2, 1, 0].map((nodeId) => ({
    nodeId,
    host: "10.3.220.89",
    port: 9092 + [0, 3, 6][nodeId]!,
    rack: null,
  })),
  clusterId: "wyOEk0m7Tn-08oGZjtVgEg",
  controllerId: 2,
  topics: [{
    errorCode: 0,
    name: "test-topic-f5e17a86896ebfdeb429-80829-a37b6dde-1adc-4687-813d-52d75a0a0f78",
    isInternal: false,
    partitions: [{
      errorCode: 0,
      partitionIndex: 0,
      leaderId: 0,
      leaderEpoch: 0,
      replicaNodes: [0],
      isrNodes: [0],
      offlineReplicas: [],
    }],
  }],
};

const header = (version: number) => ({
  apiKey: apiKey.metadata,
  apiVersion: version,
  correlationId: 5,
  clientId: null,
});

t.test("a v5 answer is byte for byte what a Kafka broker sent for the same cluster", (t) => {
  const bytes = encodeMetadataResponse(header(5), cluster, 1 << 16);
  t.equal(new KafkaReader(bytes).int32(), 5, "the correlation id first");
  t.same(bytes.subarray(4), brokerV5);
  t.end();
});

t.test("each version adds its fields: v0 has none of the later ones, v8 has them all", (t) => {
  const lengths = [0, 1, 2, 3, 5, 7, 8].map((v) =>
    encodeMetadataResponse(header(v), cluster, 1 << 16).length
  );
  t.ok(
    lengths.every((n, i) => i === 0 || n > lengths[i - 1]!),
    `each version is longer than the one before: ${lengths}`,
  );
  const v0 = new KafkaReader(encodeMetadataResponse(header(0), cluster, 1 << 16));
  v0.int32();
  const brokers = v0.array((r) => [r.int32(), r.string(), r.int32()]);
  t.same(brokers[0], [2, "10.3.220.89", 9098], "no rack in v0");
  const topics = v0.array((
    r,
  ) => [
    r.int16(),
    r.string(),
    r.array((p) => [p.int16(), p.int32(), p.int32(), p.array((x) => x.int32()), p.array((x) => x.int32())]),
  ]);
  t.equal(topics.length, 1);
  t.equal(v0.remaining, 0, "no cluster id, controller, throttle time or epochs in v0");
  t.throws(() => encodeMetadataResponse(header(8), cluster, 64), /over 64 bytes/, "bounded");
  t.end();
});

t.test("requests: v0's empty list and v1's null mean every topic; v4 carries auto-creation", (t) => {
  const read = (version: number, write: (w: KafkaWriter) => void) => {
    const w = new KafkaWriter(256);
    write(w);
    return readMetadataRequest(version, new KafkaReader(w.bytes()));
  };
  t.same(read(0, (w) => w.int32(0)), { topics: null, allowAutoTopicCreation: true });
  t.same(read(1, (w) => w.int32(0)), { topics: [], allowAutoTopicCreation: true }, "v1: empty is none");
  t.same(read(1, (w) => w.int32(-1)), { topics: null, allowAutoTopicCreation: true });
  t.same(read(4, (w) => w.array(["a", "b"], (x, n) => x.nullableString(n)).boolean(false)), {
    topics: ["a", "b"],
    allowAutoTopicCreation: false,
  });
  t.same(read(8, (w) => w.int32(-1).boolean(true).boolean(false).boolean(false)).topics, null);
  t.throws(() => read(9, (w) => w.int32(-1)), /Metadata v9 is not read here/);
  t.throws(() => read(1, (w) => w.int32(50)), /50 items/, "a count the frame cannot hold");
  t.end();
});
