import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";

interface Record {
  key: string | null;
  value: string | null;
  headers: [string, string][];
}

/** Runs the `@platformatic/kafka` script under Deno; what it sent and what it fetched back. */
function platformatic(broker: string, topic: string): Promise<{ sent: Record[]; read: Record[] }> {
  const script = new URL("../helpers/kafka/platformatic_client.ts", import.meta.url).pathname;
  const options = {
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
    cwd: new URL("../..", import.meta.url).pathname,
  };
  return new Promise((resolve, reject) => {
    execFile("deno", ["run", "-A", script, broker, topic], options, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`the client failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

// @platformatic/kafka (pure JavaScript, independent of kafkajs and librdkafka) produces with acks
// 0, 1 and -1, uncompressed and gzip, with binary keys, null keys and values and headers, and reads
// everything back with its own Fetch; HTTP reads the same records.
t.test("@platformatic/kafka produces and fetches", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-platformatic-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));

  const { sent, read } = await platformatic(kafkaAddressOf(server.stderr()), "plt");
  t.equal(sent.length, 30, "30 records sent");
  t.same(read.map((r) => ({ key: r.key, value: r.value, headers: r.headers })), sent, "read back exactly");
  t.same(
    read.map((r) => Number((r as Record & { offset: string }).offset)),
    sent.map((_, i) => i),
    "in order",
  );

  const polled = await (await fetch(
    `${server.baseUrl}/streams/kafka/topics/plt/partitions/0/messages?offset=0&count=100`,
  )).json();
  t.same(
    polled.messages.map((m: { key_base64: string | null; payload: string | null }) => ({
      key: m.key_base64,
      value: m.payload,
    })),
    sent.map((r) => ({ key: r.key, value: r.value })),
    "the same keys and values through HTTP",
  );
});
