import { Kafka, logLevel } from "kafkajs";

/**
 * One member of a kafkajs consumer group, as a process of its own so that a test can stop it
 * gracefully (SIGTERM: the consumer disconnects, which sends LeaveGroup) or kill it (SIGKILL: no
 * LeaveGroup; its session must lapse). It prints one JSON line per event on standard output:
 *
 *   {"event":"joined","member":"...","partitions":[0,3,...]}   after each rebalance (its assignment)
 *   {"event":"record","partition":3,"offset":17,"value":"..."}   after the record's processing
 *
 * Offsets are committed by kafkajs (after each batch, and before each rebalance).
 * Usage: `deno run -A test/helpers/kafka/kafkajs_group_member.ts <host:port[,host:port...]> <group> <topic> <session ms>`.
 */

const [broker, groupId, topic, sessionText] = Deno.args;
if (broker === undefined || groupId === undefined || topic === undefined || sessionText === undefined) {
  throw new Error("usage: <host:port> <group> <topic> <session timeout ms>");
}
const sessionTimeout = Number(sessionText);
const print = (line: unknown) => console.log(JSON.stringify(line));

const kafka = new Kafka({
  clientId: "strata-group-test",
  brokers: broker.split(","),
  // STRATA_TEST_KAFKAJS_LOG=1 prints kafkajs's own log on standard error, for a failing test's reader.
  logLevel: Deno.env.get("STRATA_TEST_KAFKAJS_LOG") === "1" ? logLevel.DEBUG : logLevel.NOTHING,
  requestTimeout: 5000,
  retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
});
const consumer = kafka.consumer({
  groupId,
  sessionTimeout,
  rebalanceTimeout: 20_000,
  heartbeatInterval: 500,
  // A short fetch wait and few retries: kafkajs goes on heartbeating a coordinator it cannot reach
  // until its retries run out, then finds the new one; each retry waits for a fetch first.
  maxWaitTimeInMs: 500,
  retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 },
});
consumer.on(consumer.events.GROUP_JOIN, (e) => {
  const assigned = e.payload.memberAssignment[topic] ?? [];
  print({ event: "joined", member: e.payload.memberId, partitions: [...assigned].sort((a, b) => a - b) });
});

let stopping = false;
Deno.addSignalListener("SIGTERM", () => {
  if (stopping) return;
  stopping = true;
  consumer.disconnect().finally(() => Deno.exit(0));
});

await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
await consumer.run({
  autoCommitInterval: 200,
  eachMessage: ({ partition, message }) => {
    print({
      event: "record",
      partition,
      offset: Number(message.offset),
      value: message.value?.toString() ?? null,
    });
    return Promise.resolve();
  },
});
