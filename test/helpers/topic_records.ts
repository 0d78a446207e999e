import type { Test } from "tap";
import type { PolledMessage, StrataClient } from "../../src/client/strata_client.ts";
import { Rng } from "../../src/runtime/rng.ts";

// Records of end-to-end tests that read a topic back byte for byte: each partition's records are
// reproducible from their partition and index, and compared field by field.

const messageBytes = 10 * 1024;

/** Record `i` of `partition`'s payload: 10 KiB drawn from a generator seeded by both. */
export function payloadOf(partition: number, i: number): Uint8Array {
  const rng = new Rng(partition * 100_000 + i);
  return Uint8Array.from({ length: messageBytes }, () => rng.int(0, 255));
}

/** Produces records `from` to `from + count - 1` to each of the topic's `partitions` in the stream "kafka". */
export async function produceRecords(
  client: StrataClient,
  partitions: number,
  topic: string,
  from: number,
  count: number,
): Promise<void> {
  for (let p = 0; p < partitions; p++) {
    for (let i = from; i < from + count; i += 50) {
      const batch = Array.from({ length: Math.min(50, from + count - i) }, (_, k) => ({
        payload: payloadOf(p, i + k),
        key: `key-${i + k}`,
        headers: [{ name: "n", value: String(i + k) }],
        timestamp: 1_700_000_000_000 + i + k,
      }));
      await client.produce("kafka", topic, batch, p);
    }
  }
}

/**
 * Stream "kafka" and its tiered topic `topic`, as the sources of restore and read-replica tests have
 * them: 1 MiB segments rolled after 1 s, 1 MiB kept locally per partition.
 */
export async function createSourceTopic(
  client: StrataClient,
  topic: string,
  partitions: number,
): Promise<void> {
  await client.createStream("kafka");
  await client.createTopic("kafka", {
    name: topic,
    partitions,
    segment_size: "1 MiB",
    segment_max_age: "1 s",
    local_retention_size: "1 MiB",
    tiered: true,
  });
}

/** Every record of the partition from its start, over HTTP. */
export async function readAll(
  client: StrataClient,
  topic: string,
  partition: number,
): Promise<PolledMessage[]> {
  const all: PolledMessage[] = [];
  for (let offset = 0, rounds = 0; rounds < 10_000; rounds++) {
    const { messages, next_offset } = await client.poll("kafka", topic, partition, { offset, count: 500 });
    if (messages.length === 0) return all;
    all.push(...messages);
    offset = next_offset;
  }
  throw new Error("Cannot read the partition: it did not end");
}

/** The same records, field by field and byte for byte. */
export function sameRecords(t: Test, got: PolledMessage[], want: PolledMessage[], what: string): void {
  t.equal(got.length, want.length, `${what}: ${got.length} records`);
  const differing = got.findIndex((m, i) => {
    const w = want[i]!;
    return m.offset !== w.offset || m.timestamp !== w.timestamp || m.key !== w.key ||
      Buffer.compare(Buffer.from(m.payload!), Buffer.from(w.payload!)) !== 0 ||
      JSON.stringify(m.headers) !== JSON.stringify(w.headers);
  });
  t.equal(differing, -1, `${what}: every record byte for byte, offsets and timestamps unchanged`);
}
