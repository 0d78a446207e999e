import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { Kafka, logLevel } from "kafkajs";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { httpValues, kcatValues } from "../helpers/kafka/isolated_reads.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { waitFor } from "../helpers/wait_for.ts";

// Transactions against the real server: kafkajs's transactional producer commits and aborts, a new
// producer with the same transactional id fences the old one, a transaction left open past its
// timeout is aborted by the coordinator, and offsets sent in a transaction (consume-transform-produce)
// are committed or dropped with it. Consumers read them as Kafka's read_committed and
// read_uncommitted isolation levels say (kafkajs, and librdkafka through kcat).
async function server(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), "strata-txn-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Groups rebalance at once: each consumer here is its group's only member.
  const running = await spawnServer(["--config", configCopy(dir)], {
    STRATA_GROUPS_GROUP_INITIAL_REBALANCE_DELAY: "0",
  });
  t.teardown(() => running.stop("SIGKILL"));
  const broker = kafkaAddressOf(running.stderr());
  const baseUrl = running.baseUrl;
  const kafka = new Kafka({ clientId: "strata-txn", brokers: [broker], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  return { broker, kafka, admin, baseUrl };
}

/** The values a kafkajs consumer of a fresh group reads from `topic` until `last` arrives. */
async function kafkajsValues(kafka: Kafka, topic: string, readUncommitted: boolean, last: string) {
  const consumer = kafka.consumer({ groupId: `g-${topic}-${readUncommitted}`, readUncommitted });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const values: string[] = [];
    await consumer.run({
      eachMessage: ({ message }) => Promise.resolve(void values.push(String(message.value))),
    });
    await waitFor(`kafkajs to read ${last}`, () => values.includes(last), { deadlineMs: 30_000 });
    return values;
  } finally {
    await consumer.disconnect();
  }
}

t.test("kafkajs commits and aborts; read_committed consumers skip the aborted records", async (t) => {
  const { broker, kafka, admin, baseUrl } = await server(t);
  await admin.createTopics({ topics: [{ topic: "tx-out", numPartitions: 1 }] });
  const producer = kafka.producer({ transactionalId: "tx-1", maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const run = async (values: string[], commit: boolean) => {
    const txn = await producer.transaction();
    await txn.send({ topic: "tx-out", messages: values.map((value) => ({ value })) });
    await (commit ? txn.commit() : txn.abort());
  };
  await run(["c1", "c2"], true);
  await run(["a1", "a2"], false);
  await run(["c3"], true);
  const committed = ["c1", "c2", "c3"];
  const everything = ["c1", "c2", "a1", "a2", "c3"];
  t.same(await kafkajsValues(kafka, "tx-out", false, "c3"), committed, "kafkajs read_committed");
  t.same(await kafkajsValues(kafka, "tx-out", true, "c3"), everything, "kafkajs read_uncommitted");
  if (kcatUnavailable() === null) {
    t.same(await kcatValues(broker, "tx-out", "read_committed"), committed, "librdkafka read_committed");
    t.same(await kcatValues(broker, "tx-out", "read_uncommitted"), everything, "librdkafka read_uncommitted");
  }
  t.same(await httpValues(baseUrl, "tx-out", "read_committed"), committed, "HTTP read_committed");
  t.same(await httpValues(baseUrl, "tx-out", "read_uncommitted"), everything, "HTTP read_uncommitted");
  const offsets = await admin.fetchTopicOffsets("tx-out");
  t.equal(offsets[0]!.high, "8", "five records and three markers");
});

t.test("a new producer with the transactional id fences the old one, whose transaction is aborted", async (t) => {
  const { kafka, admin } = await server(t);
  await admin.createTopics({ topics: [{ topic: "zombie", numPartitions: 1 }] });
  const old = kafka.producer({ transactionalId: "z", maxInFlightRequests: 1, idempotent: true });
  await old.connect();
  t.teardown(() => old.disconnect());
  const oldTxn = await old.transaction();
  await oldTxn.send({ topic: "zombie", messages: [{ value: "from-the-zombie" }] });
  const fresh = kafka.producer({ transactionalId: "z", maxInFlightRequests: 1, idempotent: true });
  await fresh.connect();
  t.teardown(() => fresh.disconnect());
  // kafkajs takes its producer id (InitProducerId) as its first transaction begins.
  const txn = await fresh.transaction();
  await t.rejects(oldTxn.commit(), /epoch|fenced/i, "the old producer's commit is refused");
  await txn.send({ topic: "zombie", messages: [{ value: "from-the-new-producer" }] });
  await txn.commit();
  t.same(await kafkajsValues(kafka, "zombie", false, "from-the-new-producer"), ["from-the-new-producer"]);
});

t.test("a transaction open past its timeout is aborted, and read_committed reads go on past it", {
  skip: kcatUnavailable() ?? false,
}, async (t) => {
  const { broker, kafka, admin } = await server(t);
  await admin.createTopics({ topics: [{ topic: "slow", numPartitions: 1 }] });
  const stalled = kafka.producer({ transactionalId: "stalled", transactionTimeout: 3000, idempotent: true });
  await stalled.connect();
  t.teardown(() => stalled.disconnect());
  const open = await stalled.transaction();
  await open.send({ topic: "slow", messages: [{ value: "left-open" }] });
  const other = kafka.producer({ transactionalId: "other", maxInFlightRequests: 1, idempotent: true });
  await other.connect();
  t.teardown(() => other.disconnect());
  const txn = await other.transaction();
  await txn.send({ topic: "slow", messages: [{ value: "after" }] });
  await txn.commit();
  t.same(
    await kcatValues(broker, "slow", "read_committed"),
    [],
    "the open transaction holds the stable offset",
  );
  await waitFor("the timed-out transaction's abort to release the stable offset", async () => {
    return (await kcatValues(broker, "slow", "read_committed")).includes("after");
  }, { deadlineMs: 20_000 });
  t.same(await kcatValues(broker, "slow", "read_committed"), ["after"], "the aborted record is not read");
});

t.test("consume-transform-produce: offsets sent in a transaction are committed with it, dropped by an abort", async (t) => {
  const { kafka, admin } = await server(t);
  await admin.createTopics({
    topics: [{ topic: "in", numPartitions: 1 }, { topic: "out", numPartitions: 1 }],
  });
  const producer = kafka.producer({ transactionalId: "ctp", maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const committedOffset = async () => {
    const [topic] = await admin.fetchOffsets({ groupId: "ctp-group", topics: ["in"] });
    return topic!.partitions[0]!.offset;
  };
  const step = async (value: string, offset: string, commit: boolean) => {
    const txn = await producer.transaction();
    await txn.send({ topic: "out", messages: [{ value }] });
    await txn.sendOffsets({
      consumerGroupId: "ctp-group",
      topics: [{ topic: "in", partitions: [{ partition: 0, offset }] }],
    });
    await (commit ? txn.commit() : txn.abort());
  };
  await step("x1", "2", true);
  await waitFor("the committed transaction's offset", async () => (await committedOffset()) === "2", {
    deadlineMs: 10_000,
  });
  await step("x2", "3", false);
  // The next transaction begins once the abort completed (its markers written).
  await step("x3", "5", true);
  await waitFor("the second committed transaction's offset", async () => (await committedOffset()) === "5", {
    deadlineMs: 10_000,
  });
  t.same(await kafkajsValues(kafka, "out", false, "x3"), ["x1", "x3"], "the aborted output is not read");
});

t.test("an aborted transaction's offsets never become the group's", async (t) => {
  const { kafka, admin } = await server(t);
  await admin.createTopics({ topics: [{ topic: "in2", numPartitions: 1 }] });
  const producer = kafka.producer({ transactionalId: "ctp-abort", maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const aborted = await producer.transaction();
  await aborted.sendOffsets({
    consumerGroupId: "g2",
    topics: [{ topic: "in2", partitions: [{ partition: 0, offset: "7" }] }],
  });
  await aborted.abort();
  // kafkajs sends again while the id is answered CONCURRENT_TRANSACTIONS: the send goes once the
  // abort completed, and the pending offsets were dropped by then.
  const next = await producer.transaction();
  await next.send({ topic: "in2", messages: [{ value: "after-the-abort" }] });
  await next.commit();
  const [topic] = await admin.fetchOffsets({ groupId: "g2", topics: ["in2"] });
  t.equal(topic!.partitions[0]!.offset, "-1", "no offset committed for g2");
});
