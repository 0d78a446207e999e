import t from "tap";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import type { KafkaReader, KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import { openServer } from "../helpers/open_server.ts";
import { openTestListener } from "../helpers/kafka/kafka_listener.ts";
import { kafkaRequest, KafkaWireClient } from "../helpers/kafka/kafka_wire.ts";

// DescribeTransactions and ListTransactions over the wire, in process: a transactional id taken
// through InitProducerId and AddPartitionsToTxn is described and listed as Kafka names its state.

t.test("DescribeTransactions and ListTransactions show an ongoing transaction and filter the list", async (t) => {
  const opened = await openServer(t);
  await opened.client().createStream("kafka");
  await opened.client().createTopic("kafka", { name: "orders", partitions: 2 });
  const listener = await openTestListener(t, opened.server, opened.clock);
  const kafka = await KafkaWireClient.connect(listener.address.port);
  t.teardown(() => kafka.close());
  let correlation = 0;
  const ask = async (key: number, version: number, body: (w: KafkaWriter) => void): Promise<KafkaReader> => {
    kafka.send(kafkaRequest(key, version, ++correlation, body));
    const reader = (await kafka.next())!;
    t.equal(reader.int32(), correlation, "answers in order");
    if (version >= flexibleFrom[key]!) reader.skipTaggedFields();
    return reader;
  };
  const found = await ask(apiKey.findCoordinator, 1, (w) => w.nullableString("tv").int8(1));
  found.int32();
  t.equal(found.int16(), kafkaErrorCode.none, "this node coordinates the id");
  const init = await ask(apiKey.initProducerId, 1, (w) => w.nullableString("tv").int32(60_000));
  init.int32();
  t.equal(init.int16(), kafkaErrorCode.none);
  const producerId = Number(init.int64());
  const epoch = init.int16();
  const add = await ask(apiKey.addPartitionsToTxn, 1, (w) => {
    w.nullableString("tv").int64(producerId).int16(epoch);
    w.array([0], (x) => x.nullableString("orders").array([1, 0], (p, i) => p.int32(i)));
  });
  add.int32();
  t.same(add.array((x) => [x.string(), x.array((p) => [p.int32(), p.int16()])]), [["orders", [[1, 0], [
    0,
    0,
  ]]]]);

  const described = await ask(apiKey.describeTransactions, 0, (w) => {
    w.compactArray(["tv", "nobody"], (x, id) => x.compactNullableString(id)).emptyTaggedFields();
  });
  described.int32();
  const states = described.compactArray((r) => {
    const state = {
      error: r.int16(),
      id: r.compactString(),
      state: r.compactString(),
      timeoutMs: r.int32(),
      started: r.int64() > 0,
      producerId: Number(r.int64()),
      epoch: r.int32(),
      topics: r.compactArray((x) => {
        const topic = [x.compactString(), x.compactArray((p) => p.int32())];
        x.skipTaggedFields();
        return topic;
      }),
    };
    r.skipTaggedFields();
    return state;
  });
  t.same(states, [
    {
      error: 0,
      id: "tv",
      state: "Ongoing",
      timeoutMs: 60_000,
      started: true,
      producerId,
      epoch,
      topics: [["orders", [0, 1]]],
    },
    {
      error: kafkaErrorCode.transactionalIdNotFound,
      id: "nobody",
      state: "",
      timeoutMs: 0,
      started: false,
      producerId: -1,
      epoch: -1,
      topics: [],
    },
  ]);

  const list = async (states: string[], producers: number[]) => {
    const r = await ask(apiKey.listTransactions, 0, (w) => {
      w.compactArray(states, (x, s) => x.compactNullableString(s));
      w.compactArray(producers, (x, p) => x.int64(p)).emptyTaggedFields();
    });
    r.int32();
    const error = r.int16();
    const unknown = r.compactArray((x) => x.compactString());
    const listed = r.compactArray((x) => {
      const item = [x.compactString(), Number(x.int64()), x.compactString()];
      x.skipTaggedFields();
      return item;
    });
    return { error, unknown, listed };
  };
  t.same(await list([], []), { error: 0, unknown: [], listed: [["tv", producerId, "Ongoing"]] });
  t.same(await list(["Empty", "Sleeping"], []), { error: 0, unknown: ["Sleeping"], listed: [] }, "by state");
  t.same(await list([], [producerId + 1]), { error: 0, unknown: [], listed: [] }, "by producer id");

  // The same state through the HTTP API.
  const get = async (path: string) => {
    const response = await opened.raw(path);
    return { status: response.status, body: await response.json() };
  };
  const view = {
    transactional_id: "tv",
    producer_id: producerId,
    producer_epoch: epoch,
    state: "Ongoing",
    timeout_ms: 60_000,
    started_at: opened.clock.wallMs(),
    updated_at: opened.clock.wallMs(),
    partitions: [{ topic: "orders", partition: 0 }, { topic: "orders", partition: 1 }],
  };
  t.same(await get("/transactions"), { status: 200, body: { transactions: [view] } }, "open transactions");
  t.same(await get("/transactions?state=Empty,CompleteCommit"), { status: 200, body: { transactions: [] } });
  t.same((await get("/transactions?state=all")).body.transactions, [view]);
  t.same(await get("/transactions/tv"), { status: 200, body: view });
  const unknown = await get("/transactions/nobody");
  t.same([unknown.status, unknown.body.error], [404, "not_found"]);
  const badState = await get("/transactions?state=Sleeping");
  t.same([badState.status, badState.body.error], [400, "invalid_state"]);
  t.match(badState.body.message, /state "Sleeping" is none of all, Empty, Ongoing/);
});

/** The first flexible version of the APIs asked here (their response header has tagged fields from it). */
const flexibleFrom: Record<number, number> = {
  [apiKey.findCoordinator]: 3,
  [apiKey.initProducerId]: 2,
  [apiKey.addPartitionsToTxn]: 3,
  [apiKey.describeTransactions]: 0,
  [apiKey.listTransactions]: 0,
};
