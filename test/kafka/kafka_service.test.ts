import t, { type Test } from "tap";
import type { KafkaReader } from "../../src/kafka/wire/kafka_codec.ts";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { standaloneNodeId } from "../../src/kafka/kafka_service.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { ConfigError } from "../../src/config/config_error.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import { openServer } from "../helpers/open_server.ts";
import { encodeRecordBatch } from "../../src/log/batch/record_batch.ts";
import {
  kafkaRequest,
  KafkaWireClient,
  metadataBody,
  produceBody,
  readMetadataAnswer,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

async function openKafka(t: Test, env: Record<string, string> = {}) {
  const opened = await openServer(t);
  const listener = await openTestListener(t, opened.server, opened.clock, env);
  const connect = async () => {
    const client = await KafkaWireClient.connect(listener.address.port);
    t.teardown(() => client.close());
    return client;
  };
  const metric = async (name: string) => (await opened.server.registry.getSingleMetricAsString(name));
  return { ...opened, listener, connect, metric };
}

/** The next answer after its correlation id. */
async function answerBody(client: KafkaWireClient): Promise<KafkaReader> {
  const reader = (await client.next())!;
  reader.int32();
  return reader;
}

t.test("ApiVersions over TCP lists the APIs served; a version past v3 is answered in v0", async (t) => {
  const { connect } = await openKafka(t);
  const client = await connect();
  client.send(kafkaRequest(apiKey.apiVersions, 2, 11));
  client.send(kafkaRequest(apiKey.apiVersions, 9, 12));
  const v2 = (await client.next())!;
  t.equal(v2.int32(), 11);
  t.equal(v2.int16(), kafkaErrorCode.none);
  const ranges = v2.array((r) => [r.int16(), r.int16(), r.int16()]);
  t.same(ranges, [
    [apiKey.produce, 0, 7],
    [apiKey.fetch, 4, 11],
    [apiKey.listOffsets, 1, 5],
    [apiKey.metadata, 0, 8],
    [apiKey.offsetCommit, 2, 7],
    [apiKey.offsetFetch, 1, 7],
    [apiKey.findCoordinator, 0, 3],
    [apiKey.joinGroup, 2, 5],
    [apiKey.heartbeat, 0, 3],
    [apiKey.leaveGroup, 0, 3],
    [apiKey.syncGroup, 0, 3],
    [apiKey.describeGroups, 0, 4],
    [apiKey.listGroups, 0, 3],
    [apiKey.saslHandshake, 0, 1],
    [apiKey.apiVersions, 0, 3],
    [apiKey.createTopics, 2, 4],
    [apiKey.deleteTopics, 1, 4],
    [apiKey.initProducerId, 0, 4],
    [apiKey.addPartitionsToTxn, 0, 3],
    [apiKey.addOffsetsToTxn, 0, 3],
    [apiKey.endTxn, 0, 3],
    [apiKey.txnOffsetCommit, 0, 3],
    [apiKey.describeConfigs, 0, 2],
    [apiKey.saslAuthenticate, 0, 2],
    [apiKey.deleteGroups, 0, 1],
    [apiKey.describeProducers, 0, 0],
    [apiKey.describeTransactions, 0, 0],
    [apiKey.listTransactions, 0, 0],
  ]);
  const v9 = (await client.next())!;
  t.equal(v9.int32(), 12);
  t.equal(v9.int16(), kafkaErrorCode.unsupportedVersion);
});

t.test("Metadata creates a topic on first use, in the Kafka stream the HTTP API sees", async (t) => {
  const { connect, client: http } = await openKafka(t, { STRATA_KAFKA_DEFAULT_PARTITIONS: "3" });
  const kafka = await connect();
  kafka.send(kafkaRequest(apiKey.metadata, 4, 1, metadataBody(4, ["orders", "_schemas"])));
  const answer = readMetadataAnswer(await answerBody(kafka), 4);
  t.equal(answer.brokers.length, 1);
  t.equal(answer.brokers[0]!.nodeId, standaloneNodeId);
  t.equal(answer.controllerId, standaloneNodeId);
  t.same(answer.topics.map((x) => [x.name, x.errorCode, x.partitions.length]), [
    ["orders", 0, 3],
    ["_schemas", 0, 3],
  ], "both created, a name with a leading underscore as well");
  t.same(answer.topics[0]!.partitions[2], { errorCode: 0, index: 2, leader: 1, replicas: [1], isr: [1] });
  const described = await http().getTopic("kafka", "orders");
  t.equal(described["partitions"], 3, "the HTTP API sees the topic under the kafka stream");

  kafka.send(kafkaRequest(apiKey.metadata, 1, 2, metadataBody(1, null)));
  const all = readMetadataAnswer(await answerBody(kafka), 1);
  t.same(all.topics.map((x) => x.name).sort(), ["_schemas", "orders"], "null asks for every topic");
});

t.test("Metadata refuses what it cannot create, topic by topic", async (t) => {
  const { connect, metric } = await openKafka(t);
  const kafka = await connect();
  kafka.send(kafkaRequest(apiKey.metadata, 4, 3, metadataBody(4, ["absent"], false)));
  kafka.send(kafkaRequest(apiKey.metadata, 8, 4, metadataBody(8, ["..", "a/b", "x".repeat(250)])));
  const notAllowed = readMetadataAnswer(await answerBody(kafka), 4);
  t.same(notAllowed.topics.map((x) => x.errorCode), [kafkaErrorCode.unknownTopicOrPartition]);
  const invalid = readMetadataAnswer(await answerBody(kafka), 8);
  t.same(invalid.topics.map((x) => x.errorCode), Array(3).fill(kafkaErrorCode.invalidTopicException));
  t.match(await metric("strata_kafka_request_errors_total"), /api="metadata"\} 2/);
  t.match(await metric("strata_kafka_requests_total"), /api="metadata"\} 2/);
});

t.test("auto_create_topics = false answers UNKNOWN_TOPIC_OR_PARTITION", async (t) => {
  const { connect } = await openKafka(t, { STRATA_KAFKA_AUTO_CREATE_TOPICS: "false" });
  const kafka = await connect();
  kafka.send(kafkaRequest(apiKey.metadata, 1, 5, metadataBody(1, ["orders"])));
  const answer = readMetadataAnswer(await answerBody(kafka), 1);
  t.same(answer.topics.map((x) => x.errorCode), [kafkaErrorCode.unknownTopicOrPartition]);
});

t.test("an unknown API key, or a version not served, closes that connection only", async (t) => {
  const { connect, metric } = await openKafka(t);
  const unknown = await connect();
  unknown.send(kafkaRequest(999, 0, 1));
  t.equal(await unknown.next(), null, "closed with no answer");
  const tooNew = await connect();
  tooNew.send(kafkaRequest(apiKey.metadata, 9, 1, () => {}));
  t.equal(await tooNew.next(), null);
  const truncated = await connect();
  truncated.send(kafkaRequest(apiKey.metadata, 1, 1, (w) => w.int32(5)));
  t.equal(await truncated.next(), null, "a body shorter than its array closes it");
  const healthy = await connect();
  healthy.send(kafkaRequest(apiKey.apiVersions, 0, 42));
  t.equal((await healthy.next())!.int32(), 42, "another connection is still served");
  const closed = await metric("strata_kafka_connections_closed_total");
  t.match(closed, /reason="unknown_api"\} 1/);
  t.match(closed, /reason="unsupported_version"\} 1/);
  t.match(closed, /reason="malformed_request"\} 1/);
});

t.test("max_connections: one more connection is closed as it is accepted", async (t) => {
  const { connect, listener, metric } = await openKafka(t, { STRATA_KAFKA_MAX_CONNECTIONS: "2" });
  const first = await connect();
  const second = await connect();
  first.send(kafkaRequest(apiKey.apiVersions, 0, 1));
  second.send(kafkaRequest(apiKey.apiVersions, 0, 2));
  t.ok(await first.next());
  t.ok(await second.next());
  const third = await connect();
  await third.closedByServer();
  t.equal(listener.connectionCount, 2);
  t.match(await metric("strata_kafka_connections_refused_total"), /refused_total 1/);
  first.close();
  await waitFor("the first connection to close", () => listener.connectionCount === 1, {
    deadlineMs: 10_000,
    pace: realTime(10),
  });
  const fourth = await connect();
  fourth.send(kafkaRequest(apiKey.apiVersions, 0, 4));
  t.equal((await fourth.next())!.int32(), 4, "served once a connection closed");
});

t.test("a [kafka] stream that is no stream name stops start-up naming the key", async (t) => {
  const error = await openKafka(t, { STRATA_KAFKA_STREAM: "../etc" }).catch((e) => e);
  t.ok(error instanceof ConfigError, "a ConfigError");
  t.equal(error.key, "[kafka] stream");
});

t.test("FindCoordinator: this broker for a group and for a transactional id; other key types refused", async (t) => {
  const { connect, listener } = await openKafka(t);
  const kafka = await connect();
  kafka.send(kafkaRequest(apiKey.findCoordinator, 0, 1, (w) => w.nullableString("group-a")));
  kafka.send(kafkaRequest(apiKey.findCoordinator, 2, 2, (w) => w.nullableString("tx-1").int8(1)));
  const v0 = await answerBody(kafka);
  t.same([v0.int16(), v0.int32(), v0.string(), v0.int32()], [
    0,
    standaloneNodeId,
    "127.0.0.1",
    listener.address.port,
  ]);
  const v2 = await answerBody(kafka);
  v2.int32();
  t.same([v2.int16(), v2.nullableString(), v2.int32(), v2.string(), v2.int32()], [
    0,
    null,
    standaloneNodeId,
    "127.0.0.1",
    listener.address.port,
  ], "the transaction coordinator is this broker");
  kafka.send(kafkaRequest(apiKey.findCoordinator, 2, 3, (w) => w.nullableString("k").int8(7)));
  const other = await answerBody(kafka);
  other.int32();
  t.equal(other.int16(), kafkaErrorCode.invalidRequest, "key type 7 is neither a group nor a transaction");
});

t.test("SASL/PLAIN: only ApiVersions and SASL before authentication; a refusal is answered, then closed", async (t) => {
  const { connect } = await openKafka(t, { STRATA_KAFKA_USERS: "alice:wonderland,bob:builder" });
  const plain = (authzid: string, user: string, password: string) =>
    new TextEncoder().encode(`${authzid}\0${user}\0${password}`);
  const handshake = (version: number, correlation: number, mechanism = "PLAIN") =>
    kafkaRequest(apiKey.saslHandshake, version, correlation, (w) => w.nullableString(mechanism));
  const authenticate = (correlation: number, token: Uint8Array) =>
    kafkaRequest(apiKey.saslAuthenticate, 1, correlation, (w) => w.nullableBytes(token));

  const early = await connect();
  early.send(kafkaRequest(apiKey.metadata, 1, 1, metadataBody(1, null)));
  t.equal(await early.next(), null, "Metadata before authentication closes the connection");

  const out = await connect();
  out.send(authenticate(2, plain("", "alice", "wonderland")));
  const illegal = await answerBody(out);
  t.equal(illegal.int16(), kafkaErrorCode.illegalSaslState, "SaslAuthenticate before a handshake");
  t.equal(await out.next(), null, "then closed");

  const wrong = await connect();
  wrong.send(handshake(0, 3));
  t.equal(
    (await answerBody(wrong)).int16(),
    kafkaErrorCode.unsupportedVersion,
    "SaslHandshake v0 is not served",
  );
  wrong.send(handshake(1, 4, "SCRAM-SHA-256"));
  const scram = await answerBody(wrong);
  t.equal(scram.int16(), kafkaErrorCode.unsupportedSaslMechanism);
  t.same(scram.array((r) => r.string()), ["PLAIN"]);
  wrong.send(handshake(1, 5));
  t.equal((await answerBody(wrong)).int16(), kafkaErrorCode.none);
  wrong.send(authenticate(6, plain("", "alice", "looking-glass")));
  const failed = await answerBody(wrong);
  t.equal(failed.int16(), kafkaErrorCode.saslAuthenticationFailed);
  t.equal(failed.nullableString(), "Authentication failed: invalid username or password");
  t.equal(await wrong.next(), null, "closed after a wrong password");

  const right = await connect();
  right.send(handshake(1, 7));
  t.equal((await answerBody(right)).int16(), kafkaErrorCode.none);
  right.send(authenticate(8, plain("bob", "alice", "wonderland")));
  t.equal(
    (await answerBody(right)).int16(),
    kafkaErrorCode.saslAuthenticationFailed,
    "acting for another user is refused",
  );

  const alice = await connect();
  alice.send(handshake(1, 9));
  await answerBody(alice);
  alice.send(authenticate(10, plain("", "alice", "wonderland")));
  t.equal((await answerBody(alice)).int16(), kafkaErrorCode.none, "the right password");
  alice.send(kafkaRequest(apiKey.metadata, 1, 11, metadataBody(1, null)));
  t.ok(await alice.next(), "then every API is served");
});

t.test("a batch over the topic's max_message_bytes is answered MESSAGE_TOO_LARGE; nothing is appended", async (t) => {
  const kafka = await openKafka(t);
  const c = kafka.client();
  await c.createStream("kafka");
  await c.createTopic("kafka", { name: "small", max_message_bytes: "4 KiB" });
  const batchOf = (valueBytes: number) =>
    encodeRecordBatch([{
      offsetDelta: 0,
      timestampDelta: 0,
      key: null,
      value: new Uint8Array(valueBytes).fill(7),
      headers: [],
    }], {
      baseOffset: 0,
      baseTimestampMs: 1_700_000_000_000,
      maxTimestampMs: 1_700_000_000_000,
      timestampType: "create_time",
    });
  const client = await kafka.connect();
  const fits = batchOf(3000);
  const tooLarge = batchOf(5000);
  const both = new Uint8Array([...fits, ...tooLarge]);
  client.send(kafkaRequest(apiKey.produce, 7, 1, produceBody("small", 0, both)));
  t.equal(readProduceAnswer(await answerBody(client), 7).errorCode, kafkaErrorCode.messageTooLarge);
  client.send(kafkaRequest(apiKey.produce, 7, 2, produceBody("small", 0, fits)));
  const answer = readProduceAnswer(await answerBody(client), 7);
  t.same(
    [answer.errorCode, answer.baseOffset],
    [kafkaErrorCode.none, 0],
    "the refused request appended none",
  );
  t.same(await c.partition("kafka", "small", 0).then((p) => (p as { next_offset: number }).next_offset), 1);
  const topic = await c.getTopic("kafka", "small") as { max_message_bytes: number };
  t.equal(topic.max_message_bytes, 4096, "the option reads back through HTTP");
});
