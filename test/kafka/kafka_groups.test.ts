import t, { type Test } from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import type { KafkaReader, KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { encodeRecordBatch } from "../../src/log/batch/record_batch.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import {
  kafkaRequest,
  KafkaWireClient,
  metadataBody,
  produceBody,
  readMetadataAnswer,
  readProduceAnswer,
} from "../helpers/kafka/kafka_wire.ts";
import { openServer } from "../helpers/open_server.ts";

// The group APIs over TCP against an in-process server, as a client that gets things wrong would
// send them: every refusal is Kafka's error code, a malformed frame closes its connection, and the
// server goes on serving.

async function openKafka(t: Test) {
  const opened = await openServer(t, { STRATA_GROUPS_GROUP_INITIAL_REBALANCE_DELAY: "0 ms" });
  const listener = await openTestListener(t, opened.server, opened.clock);
  const connect = async () => {
    const client = await KafkaWireClient.connect(listener.address.port);
    t.teardown(() => client.close());
    return client;
  };
  return { ...opened, listener, connect };
}

let correlation = 100;
/** Sends one request and reads its answer's body (after the correlation id). */
async function ask(client: KafkaWireClient, api: number, version: number, body: (w: KafkaWriter) => void) {
  const id = correlation++;
  client.send(kafkaRequest(api, version, id, body));
  const answer = await client.next();
  if (answer === null) throw new Error(`the server closed the connection instead of answering API ${api}`);
  if (answer.int32() !== id) throw new Error("an answer out of order");
  return answer;
}

function joinBody(group: string, memberId: string, protocolType = "consumer", sessionMs = 10_000) {
  return (w: KafkaWriter) => {
    w.nullableString(group).int32(sessionMs).int32(20_000).nullableString(memberId).nullableString(
      protocolType,
    );
    w.array(
      [{ name: "range", metadata: new Uint8Array([0, 0, 0, 0, 0, 0]) }],
      (x, p) => x.nullableString(p.name).nullableBytes(p.metadata),
    );
  };
}

function readJoin(r: KafkaReader) {
  r.int32();
  return {
    error: r.int16(),
    generation: r.int32(),
    protocol: r.string(),
    leader: r.string(),
    memberId: r.string(),
  };
}

const heartbeatBody = (group: string, generation: number, memberId: string) => (w: KafkaWriter) =>
  w.nullableString(group).int32(generation).nullableString(memberId);

t.test("group requests out of order get Kafka's error codes", async (t) => {
  const { connect, listener, clock } = await openKafka(t);
  const c = await connect();

  const found = await ask(
    c,
    apiKey.findCoordinator,
    3,
    (w) => w.compactNullableString("g").int8(0).emptyTaggedFields(),
  );
  found.skipTaggedFields();
  found.int32();
  t.same(
    [
      found.int16(),
      found.compactNullableString(),
      found.int32(),
      found.compactNullableString(),
      found.int32(),
    ],
    [0, null, 1, "127.0.0.1", listener.address.port],
    "FindCoordinator v3: this broker coordinates the group",
  );
  const transactional = await ask(c, apiKey.findCoordinator, 1, (w) => w.nullableString("tx").int8(1));
  transactional.int32();
  t.equal(transactional.int16(), kafkaErrorCode.none, "this broker coordinates the transactional id");

  const beat = await ask(c, apiKey.heartbeat, 1, heartbeatBody("g", 1, "nobody"));
  beat.int32();
  t.equal(beat.int16(), kafkaErrorCode.unknownMemberId, "a heartbeat from no member");
  const early = await ask(
    c,
    apiKey.syncGroup,
    1,
    (w) => w.nullableString("g").int32(1).nullableString("nobody").array([], () => {}),
  );
  early.int32();
  t.equal(early.int16(), kafkaErrorCode.unknownMemberId, "a sync before any join");

  const first = readJoin(await ask(c, apiKey.joinGroup, 4, joinBody("g", "")));
  t.equal(first.error, kafkaErrorCode.memberIdRequired, "JoinGroup v4: a member id is given out first");
  t.match(first.memberId, /^strata-test-[0-9a-f]{32}$/);
  const joined = readJoin(await ask(c, apiKey.joinGroup, 4, joinBody("g", first.memberId)));
  t.same([joined.error, joined.generation, joined.leader, joined.protocol], [0, 1, first.memberId, "range"]);

  const stale = await ask(c, apiKey.heartbeat, 1, heartbeatBody("g", 0, joined.memberId));
  stale.int32();
  t.equal(stale.int16(), kafkaErrorCode.illegalGeneration, "a heartbeat of an old generation");
  const commit = (generation: number, memberId: string) => (w: KafkaWriter) => {
    w.nullableString("g").int32(generation).nullableString(memberId).int64(-1);
    w.array(
      ["orders"],
      (x, name) => x.nullableString(name).array([0], (y) => y.int32(0).int64(5).nullableString(null)),
    );
  };
  for (
    const [generation, memberId, code, what] of [
      [7, joined.memberId, kafkaErrorCode.illegalGeneration, "a commit of another generation"],
      [1, "someone", kafkaErrorCode.unknownMemberId, "a commit from no member"],
    ] as const
  ) {
    const answer = await ask(c, apiKey.offsetCommit, 2, commit(generation, memberId));
    answer.array((x) => [x.nullableString(), x.array((y) => [y.int32(), t.equal(y.int16(), code, what)])]);
  }
  const tooShort = readJoin(await ask(c, apiKey.joinGroup, 4, joinBody("g", "", "consumer", 1)));
  t.equal(tooShort.error, kafkaErrorCode.invalidSessionTimeout, "a session timeout below the minimum");
  const other = readJoin(await ask(c, apiKey.joinGroup, 2, joinBody("g", "", "connect")));
  t.equal(other.error, kafkaErrorCode.inconsistentGroupProtocol, "another protocol type than the group's");
  const deleting = await ask(
    c,
    apiKey.deleteGroups,
    1,
    (w) => w.array(["g", "none"], (x, g) => x.nullableString(g)),
  );
  deleting.int32();
  t.same(deleting.array((x) => [x.nullableString(), x.int16()]), [
    ["g", kafkaErrorCode.nonEmptyGroup],
    ["none", kafkaErrorCode.groupIdNotFound],
  ]);
  const described = await ask(
    c,
    apiKey.describeGroups,
    0,
    (w) => w.array(["g"], (x, g) => x.nullableString(g)),
  );
  const groups = described.array((
    x,
  ) => [x.int16(), x.nullableString(), x.nullableString(), x.nullableString(), x.nullableString()]);
  t.same(groups, [[0, "g", "CompletingRebalance", "consumer", ""]], "awaiting the leader's sync");

  // The member never syncs: once its rebalance timeout passes it is dropped, and its id is unknown.
  clock.advance(20_001);
  const gone = await ask(c, apiKey.heartbeat, 1, heartbeatBody("g", 1, joined.memberId));
  gone.int32();
  t.equal(gone.int16(), kafkaErrorCode.unknownMemberId, "a member that never synced is dropped");
});

t.test("a malformed group request closes its connection; the server serves the next one", async (t) => {
  const { connect } = await openKafka(t);
  const bad = await connect();
  const truncated = kafkaRequest(apiKey.joinGroup, 5, 1, (w) => w.nullableString("g").int32(10_000));
  bad.send(truncated);
  await bad.closedByServer();
  t.pass("closed");
  const good = await connect();
  const list = await ask(good, apiKey.listGroups, 3, (w) => w.emptyTaggedFields());
  list.skipTaggedFields();
  list.int32();
  t.equal(list.int16(), kafkaErrorCode.none, "ListGroups v3 answered on a new connection");
});

t.test("__consumer_offsets is internal: clients may not produce to it, create or delete it", async (t) => {
  const { connect } = await openKafka(t);
  const c = await connect();
  await ask(c, apiKey.findCoordinator, 0, (w) => w.nullableString("g"));
  const metadata = readMetadataAnswer(
    await ask(c, apiKey.metadata, 4, metadataBody(4, ["__consumer_offsets"])),
    4,
  );
  t.equal(
    metadata.topics[0]!.partitions.length,
    16,
    "created by the first FindCoordinator with offsets_topic_partitions",
  );
  const batch = encodeRecordBatch([{
    offsetDelta: 0,
    timestampDelta: 0,
    key: null,
    value: new Uint8Array([1]),
    headers: [],
  }], {
    baseOffset: 0,
    baseTimestampMs: 0,
    maxTimestampMs: 0,
    timestampType: "create_time",
  });
  const produced = readProduceAnswer(
    await ask(c, apiKey.produce, 3, produceBody("__consumer_offsets", 0, batch)),
    3,
  );
  t.equal(produced.errorCode, kafkaErrorCode.invalidTopicException);
  const deleted = await ask(
    c,
    apiKey.deleteTopics,
    1,
    (w) => w.array(["__consumer_offsets"], (x, n) => x.nullableString(n)).int32(1000),
  );
  deleted.int32();
  t.same(deleted.array((x) => [x.nullableString(), x.int16()]), [[
    "__consumer_offsets",
    kafkaErrorCode.invalidTopicException,
  ]]);
});
