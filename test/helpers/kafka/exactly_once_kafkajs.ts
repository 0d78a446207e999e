import { Kafka, logLevel } from "kafkajs";

/**
 * A consume-transform-produce application with kafkajs's transactions, as a process of its own so
 * that a test can SIGKILL it mid-stream: it copies "in" to "out" (each value with "-out") in
 * transactions of up to `transactionRecordsMax` records that commit the group "eo"'s input offsets
 * with them (`sendOffsets`), prints "progress N" after each commit and "done" once the committed
 * offset reaches RECORDS. A restarted one joins the group "eo", starts where the last commit left
 * it, and fences the one before it by its transactional id. `exactly_once_app.py` seeds "in" and
 * checks "out" and the offset, the same as for its own librdkafka application.
 *
 * Usage: `deno run -A test/helpers/kafka/exactly_once_kafkajs.ts <host:port> <records>`.
 */

const [broker, recordsText] = Deno.args;
if (broker === undefined || recordsText === undefined) throw new Error("usage: <host:port> <records>");
const records = Number(recordsText);
const group = "eo";
/** Records one transaction copies at most. */
const transactionRecordsMax = 50;

const kafka = new Kafka({
  clientId: "strata-eo-kafkajs",
  brokers: [broker],
  logLevel: Deno.env.get("STRATA_TEST_KAFKAJS_LOG") === "1" ? logLevel.DEBUG : logLevel.NOTHING,
  requestTimeout: 10_000,
  retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
});
const producer = kafka.producer({
  transactionalId: "eo-kafkajs-app",
  idempotent: true,
  maxInFlightRequests: 1,
  transactionTimeout: 10_000,
});
const consumer = kafka.consumer({
  groupId: group,
  readUncommitted: false,
  sessionTimeout: 6000,
  rebalanceTimeout: 10_000,
  heartbeatInterval: 500,
  maxWaitTimeInMs: 500,
});
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topics: ["in"], fromBeginning: true });
let finish = () => {};
const finished = new Promise<void>((resolve) => (finish = resolve));

await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
    for (let at = 0; at < batch.messages.length; at += transactionRecordsMax) {
      if (!isRunning() || isStale()) return;
      const slice = batch.messages.slice(at, at + transactionRecordsMax);
      const position = Number(slice.at(-1)!.offset) + 1;
      const transaction = await producer.transaction();
      try {
        await transaction.send({
          topic: "out",
          acks: -1,
          messages: slice.map((m) => ({ partition: 0, value: `${m.value?.toString()}-out` })),
        });
        await transaction.sendOffsets({
          consumerGroupId: group,
          topics: [{ topic: "in", partitions: [{ partition: 0, offset: String(position) }] }],
        });
        await transaction.commit();
      } catch (error) {
        await transaction.abort().catch(() => {});
        throw error;
      }
      resolveOffset(slice.at(-1)!.offset);
      console.log(`progress ${position}`);
      if (position >= records) finish();
      await heartbeat();
    }
  },
});
await finished;
console.log("done");
await consumer.disconnect();
await producer.disconnect();
