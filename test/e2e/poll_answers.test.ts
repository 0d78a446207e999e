import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { streamedBodyBytesMin } from "../../src/server/codec/body_codec.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const messages = 2000;
const messageBytes = 1024;
const pollCount = 100;

/** Message `offset`'s payload: its offset in the first four bytes, then a pattern of its own. */
function payloadOf(offset: number): Uint8Array {
  const payload = new Uint8Array(messageBytes).map((_, i) => (offset * 31 + i * 7) & 0xff);
  new DataView(payload.buffer).setUint32(0, offset);
  return payload;
}

t.test("under Deno.serve, poll answers freed once written reach every client whole (32 at once)", async (t) => {
  // The server frees each large answer's buffer as soon as the HTTP layer asks for more, which it
  // does once it holds the piece for writing. If that hold were not its own, a freed answer's memory
  // could be reused by the next answer while still being sent, and some client here would read
  // another poll's bytes: every payload is checked against its offset.
  const dir = tempDir(t, "strata-answers-");
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  await client.createStream("s");
  await client.createTopic("s", { name: "t", partitions: 1 });
  for (let at = 0; at < messages; at += 500) {
    const batch = Array.from({ length: 500 }, (_, i) => ({ payload: payloadOf(at + i) }));
    await client.produce("s", "t", batch, 0);
  }
  const rng = new Rng(43);
  const starts = Array.from({ length: 32 * 8 }, () => rng.int(0, messages - pollCount));
  let wrong = 0;
  let polled = 0;
  const poller = async (worker: number) => {
    for (let i = worker; i < starts.length; i += 32) {
      const answer = await client.poll("s", "t", 0, { offset: starts[i]!, count: pollCount });
      polled++;
      if (answer.messages.length !== pollCount) wrong++;
      for (const m of answer.messages) {
        const expected = payloadOf(m.offset);
        if (m.payload!.length !== expected.length || !m.payload!.every((b, j) => b === expected[j])) wrong++;
      }
    }
  };
  await Promise.all(Array.from({ length: 32 }, (_, w) => poller(w)));
  t.equal(polled, starts.length, "every poll answered");
  t.equal(wrong, 0, "every message of every answer is its own");
  t.ok(
    pollCount * messageBytes > streamedBodyBytesMin,
    "the answers are large enough to be streamed and freed",
  );
  t.equal(await server.stop("SIGTERM"), 0);
});
