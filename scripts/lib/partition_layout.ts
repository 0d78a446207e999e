import { assert } from "../../src/runtime/assert.ts";

/** One topic of a benchmark's layout: its name and how many partitions it has. */
export interface TopicPlan {
  name: string;
  partitions: number;
}

/** The most partitions a topic may have (docs/API.md, "Topics"). */
export const topicPartitionsMax = 1024;

/**
 * Topics that together hold exactly `partitions` partitions, `perTopic` each and the last one
 * smaller when `perTopic` does not divide the total. Names sort in creation order: `t0000`, `t0001`, ...
 */
export function topicLayout(partitions: number, perTopic: number): TopicPlan[] {
  assert(
    Number.isSafeInteger(partitions) && partitions >= 1,
    `Cannot lay out topics: ${partitions} partitions is not a positive integer`,
  );
  assert(
    Number.isSafeInteger(perTopic) && perTopic >= 1 && perTopic <= topicPartitionsMax,
    `Cannot lay out topics: ${perTopic} partitions per topic is not 1 to ${topicPartitionsMax}`,
  );
  const topics: TopicPlan[] = [];
  for (let left = partitions; left > 0; left -= perTopic) {
    topics.push({ name: `t${String(topics.length).padStart(4, "0")}`, partitions: Math.min(perTopic, left) });
  }
  return topics;
}

/** Partitions of every topic of a `GET /streams` answer's stream, by topic name. */
export function hostedPartitions(stream: unknown): Map<string, number> {
  const topics = (stream as { topics?: unknown })?.topics;
  assert(Array.isArray(topics), "Cannot count hosted partitions: the stream has no topics array");
  const hosted = new Map<string, number>();
  for (const topic of topics as { name?: unknown; partitions?: unknown }[]) {
    assert(
      typeof topic.name === "string" && typeof topic.partitions === "number",
      `Cannot count hosted partitions: a topic without name or partitions: ${JSON.stringify(topic)}`,
    );
    hosted.set(topic.name, topic.partitions);
  }
  return hosted;
}
