import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Rng } from "../../src/runtime/rng.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatBytes, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// kcat (librdkafka 2.0) produces and consumes through the real server: keys, repeated headers,
// null values, every compression codec, binary values, and every way of choosing where to start.
const unavailable = kcatUnavailable();

t.test("kcat produces and consumes through the Kafka listener", { skip: unavailable ?? false }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-kcat-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const broker = kafkaAddressOf(server.stderr());
  const rng = new Rng(27);
  const text = (n: number) =>
    Array.from({ length: n }, () => "abcdefghijklmnopqrstuvwxyz0123456789"[rng.int(0, 35)]).join("");
  const consume = (topic: string, format: string, ...more: string[]) =>
    kcat(["-b", broker, "-C", "-t", topic, "-e", "-q", "-f", format, ...more]);

  await t.test("keys and repeated headers, byte for byte, with acks 1 and -1", async (t) => {
    const lines = Array.from({ length: 200 }, (_, i) => `key-${i}:${text(1 + rng.int(0, 2000))}`);
    for (const acks of ["1", "-1"]) {
      const produced = await kcat(
        [
          "-b",
          broker,
          "-P",
          "-t",
          `keyed${acks}`,
          "-K:",
          "-H",
          "trace=a",
          "-H",
          "trace=b",
          "-X",
          `acks=${acks}`,
        ],
        lines.join("\n") + "\n",
      );
      t.equal(produced.code, 0, `acks ${acks}: ${produced.stderr}`);
      const consumed = await consume(`keyed${acks}`, "%o|%k|%h|%s\n", "-o", "beginning");
      t.same(
        consumed.stdout.trimEnd().split("\n"),
        lines.map((line, i) =>
          `${i}|${line.slice(0, line.indexOf(":"))}|trace=a,trace=b|${line.slice(line.indexOf(":") + 1)}`
        ),
        `acks ${acks}: every record in order with its key and both headers`,
      );
    }
  });

  await t.test("null values (-Z) come back null, empty keys empty, through Kafka and HTTP", async (t) => {
    await kcat(["-b", broker, "-P", "-t", "nulls", "-Z", "-K:"], "k1:\nk2:v2\n:v3\n");
    const consumed = await consume("nulls", "%k|%S|%s\n", "-o", "beginning");
    t.same(consumed.stdout.trimEnd().split("\n"), ["k1|-1|", "k2|2|v2", "|2|v3"]);
    const polled =
      await (await fetch(`${server.baseUrl}/streams/kafka/topics/nulls/partitions/0/messages?offset=0`))
        .json();
    t.same(
      polled.messages.map((m: { key: string | null; payload: string | null }) => [m.key, m.payload]),
      [["k1", null], ["k2", "djI="], [null, "djM="]],
      "the HTTP API: a null value as null; kcat sends an empty key as none",
    );
  });

  await t.test("every compression codec is stored compressed and read back exactly", async (t) => {
    for (const codec of ["gzip", "snappy", "lz4", "zstd"]) {
      // Repeated units, so that every codec finds something to compress (snappy and lz4 only match).
      const lines = Array.from({ length: 300 }, () => text(16).repeat(1 + rng.int(0, 150)));
      const produced = await kcat(
        ["-b", broker, "-P", "-t", `z-${codec}`, "-z", codec],
        lines.join("\n") + "\n",
      );
      t.equal(produced.code, 0, `${codec}: ${produced.stderr}`);
      const consumed = await consume(`z-${codec}`, "%s\n", "-o", "beginning");
      t.same(consumed.stdout.trimEnd().split("\n"), lines, `${codec}: all ${lines.length} records`);
      const stored = await (await fetch(`${server.baseUrl}/streams/kafka/topics/z-${codec}`)).json();
      const rawBytes = lines.reduce((n, line) => n + line.length, 0);
      t.ok(
        stored.size_bytes < rawBytes * 0.9,
        `${codec}: stored compressed (${stored.size_bytes} of ${rawBytes} bytes)`,
      );
      const polled = await (await fetch(
        `${server.baseUrl}/streams/kafka/topics/z-${codec}/partitions/0/messages?offset=0&count=1000&max_bytes=67108864`,
      )).json();
      t.same(
        polled.messages.map((m: { payload: string }) => Buffer.from(m.payload, "base64").toString()),
        lines,
        `${codec}: the HTTP API reads the compressed batches record by record`,
      );
    }
  });

  await t.test("records produced through HTTP read back through Kafka exactly", async (t) => {
    const post = (path: string, body: unknown) =>
      fetch(`${server.baseUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
    t.equal((await post("/streams/kafka/topics", { name: "from-http", partitions: 1 })).status, 201);
    const produced = await post("/streams/kafka/topics/from-http/messages", {
      partition: 0,
      messages: [
        {
          key: "k1",
          headers: [{ name: "a", value: "1" }, { name: "a", value: "2" }],
          payload: "aGVsbG8=",
          timestamp: 1_700_000_000_001,
        },
        { key: null, headers: {}, payload: null, timestamp: 1_700_000_000_002 },
      ],
    });
    t.equal(produced.status, 200);
    const consumed = await consume("from-http", "%k|%h|%S|%s|%T\n", "-o", "beginning");
    t.same(consumed.stdout.trimEnd().split("\n"), [
      "k1|a=1,a=2|5|hello|1700000000001",
      "||-1||1700000000002",
    ]);
  });

  await t.test("a binary value of 256 KiB, byte for byte", async (t) => {
    const value = Uint8Array.from({ length: 256 * 1024 }, () => rng.int(0, 255));
    const file = join(dir, "value.bin");
    writeFileSync(file, value);
    t.equal((await kcat(["-b", broker, "-P", "-t", "binary", file])).code, 0);
    const consumed = await kcatBytes([
      "-b",
      broker,
      "-C",
      "-t",
      "binary",
      "-o",
      "beginning",
      "-c",
      "1",
      "-q",
      "-f",
      "%s",
    ]);
    t.ok(Buffer.from(value).equals(consumed.stdout), `the same ${value.length} bytes`);
  });

  await t.test("-o N, -o -N, -o end and -o s@timestamp start where they say", async (t) => {
    const lines = Array.from({ length: 10 }, (_, i) => `r${i}`);
    await kcat(["-b", broker, "-P", "-t", "starts"], lines.slice(0, 5).join("\n") + "\n");
    const between = Date.now() + 1;
    await waitFor("the wall clock to pass the first records' millisecond", () => Date.now() > between, {
      deadlineMs: 5000,
      pace: realTime(2),
    });
    await kcat(["-b", broker, "-P", "-t", "starts"], lines.slice(5).join("\n") + "\n");
    const from = async (...offset: string[]) => (await consume("starts", "%o\n", ...offset)).stdout.trimEnd();
    t.equal(await from("-o", "7"), "7\n8\n9");
    t.equal(await from("-o", "-2"), "8\n9");
    t.equal(await from("-o", "end"), "", "nothing past the end");
    t.equal(await from("-o", `s@${between}`), "5\n6\n7\n8\n9", "the first record at or after the time");
    t.equal(await from("-o", "beginning", "-c", "1"), "0");
  });
});
