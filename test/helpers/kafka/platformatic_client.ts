import { Buffer } from "node:buffer";
import { Consumer, ProduceAcks, Producer } from "@platformatic/kafka";

/**
 * A second independent Kafka client, `@platformatic/kafka`, as a script: it produces records with
 * binary keys, headers and null values under acks 0, 1 and -1, uncompressed and gzip, then fetches
 * the partition from offset 0 with its raw Fetch (no consumer group) until it has every record, and
 * prints one JSON object: what it sent and what it read back, bytes as base64.
 *
 * It runs under Deno because the library needs Node 22's `Promise.withResolvers`; the tap suite runs
 * under Node 20. Usage: `deno run -A test/helpers/kafka/platformatic_client.ts <host:port> <topic>`.
 */

interface SentRecord {
  key: string | null;
  value: string | null;
  headers: [string, string][];
}

const fetchDeadlineMs = 20_000;
const [broker, topic] = Deno.args;
if (broker === undefined || topic === undefined) throw new Error("usage: <host:port> <topic>");
const b64 = (bytes: Uint8Array | null | undefined) =>
  bytes === null || bytes === undefined ? null : btoa(String.fromCharCode(...bytes));

const producer = new Producer({
  clientId: "strata-platformatic",
  bootstrapBrokers: [broker],
  autocreateTopics: true,
});
const sent: SentRecord[] = [];
const acksList = [ProduceAcks.LEADER, ProduceAcks.ALL, ProduceAcks.NO_RESPONSE];
for (const [round, acks] of acksList.entries()) {
  for (const compression of ["none", "gzip"] as const) {
    const messages = Array.from({ length: 5 }, (_, i) => {
      const key = i === 0 ? null : Buffer.from([round, i, 0, 255]);
      const value = i === 4 ? null : Buffer.from(`r${round}-${compression}-${i}`);
      const headers = new Map([[Buffer.from("h"), Buffer.from([i])]]);
      return { topic, partition: 0, key, value, headers };
    });
    // deno-lint-ignore no-explicit-any
    await producer.send({ messages: messages as any, acks, compression });
    for (const m of messages) {
      sent.push({ key: b64(m.key), value: b64(m.value), headers: [["h", b64([...m.headers.values()][0])!]] });
    }
  }
}
await producer.close();

const consumer = new Consumer({
  clientId: "strata-platformatic",
  groupId: "unused",
  bootstrapBrokers: [broker],
});
const metadata = await consumer.metadata({ topics: [topic] });
const node = metadata.topics.get(topic)!.partitions[0]!.leader;
const read: (SentRecord & { offset: string })[] = [];
const deadline = Date.now() + fetchDeadlineMs;
while (read.length < sent.length && Date.now() < deadline) {
  const answer = await consumer.fetch({
    node,
    maxWaitTime: 500,
    topics: [{
      topicId: topic,
      partitions: [{
        partition: 0,
        currentLeaderEpoch: -1,
        fetchOffset: BigInt(read.length),
        lastFetchedEpoch: -1,
        partitionMaxBytes: 1 << 20,
      }],
    }],
  });
  const partition = answer.responses[0]!.partitions[0]!;
  if (partition.errorCode !== 0) throw new Error(`fetch answered error ${partition.errorCode}`);
  for (const batch of [partition.records ?? []].flat()) {
    for (const record of batch.records) {
      const offset = batch.firstOffset + BigInt(record.offsetDelta);
      if (offset < BigInt(read.length)) continue;
      read.push({
        offset: String(offset),
        key: b64(record.key),
        value: b64(record.value),
        headers: record.headers.map(([name, value]) => [
          new TextDecoder().decode(name ?? new Uint8Array()),
          b64(value)!,
        ]),
      });
    }
  }
}
await consumer.close();
console.log(JSON.stringify({ sent, read }));
