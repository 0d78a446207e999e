import { kcat } from "./kcat.ts";

// A topic's values as a consumer at an isolation level reads them: through librdkafka (kcat), or
// through the HTTP API (partition 0).

/** A partition's values as kcat reads them at an isolation level, from the beginning to the end it may read. */
export async function kcatValues(
  broker: string,
  topic: string,
  isolation: "read_committed" | "read_uncommitted",
  partition = 0,
) {
  const read = await kcat([
    ...["-b", broker, "-C", "-t", topic, "-p", String(partition), "-o", "beginning", "-e", "-q"],
    ...["-f", "%s\\n", "-X", `isolation.level=${isolation}`],
  ]);
  if (read.code !== 0) throw new Error(`Cannot read ${topic}/${partition} with kcat: ${read.stderr}`);
  return read.stdout.split("\n").filter((line) => line !== "");
}

/** A partition's payloads through the HTTP API at an isolation level. */
export async function httpValues(baseUrl: string, topic: string, isolation: string): Promise<string[]> {
  const url =
    `${baseUrl}/streams/kafka/topics/${topic}/partitions/0/messages?offset=0&isolation=${isolation}`;
  const answer = await fetch(url);
  if (answer.status !== 200) throw new Error(`Cannot poll ${topic}: ${answer.status} ${await answer.text()}`);
  const body = await answer.json() as { messages: { payload: string }[] };
  return body.messages.map((m) => Buffer.from(m.payload, "base64").toString());
}
