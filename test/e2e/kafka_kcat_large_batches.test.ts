import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { decompressRecordsWhole } from "../../src/log/compression/batch_compression.ts";
import { batchHeaderBytes, decodeBatchHeader } from "../../src/log/batch/batch_codec.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";

// kcat (librdkafka) sends batches whose records decompress to several MiB, in every codec: the
// server keeps them as sent, and the HTTP API decodes them (in pieces) back to every record.
const unavailable = kcatUnavailable();
const codes: Record<string, number> = { gzip: 1, snappy: 2, lz4: 3, zstd: 4 };

/** Per compression code, the most bytes one stored batch's records decompress to. */
function largestBatches(dataDir: string): Map<number, number> {
  const largest = new Map<number, number>();
  const logs = readdirSync(dataDir, { recursive: true, encoding: "utf8" }).filter((p) => p.endsWith(".log"));
  for (const path of logs) {
    const bytes = new Uint8Array(readFileSync(join(dataDir, path)));
    for (let at = 0;;) {
      const header = decodeBatchHeader(bytes, at);
      if (header === null || header.lengthBytes < batchHeaderBytes) break;
      const records = bytes.subarray(at + batchHeaderBytes, at + header.lengthBytes);
      if (header.compressionCode !== 0) {
        const size = decompressRecordsWhole(header.compressionCode, records).length;
        largest.set(header.compressionCode, Math.max(size, largest.get(header.compressionCode) ?? 0));
      }
      at += header.lengthBytes;
    }
  }
  return largest;
}

t.test(
  "batches of several MiB in every codec read back exactly through HTTP",
  { skip: unavailable ?? false },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "strata-kcat-large-"));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const server = await spawnServer(["--config", configCopy(dir)]);
    t.teardown(() => server.stop("SIGKILL"));
    const broker = kafkaAddressOf(server.stderr());
    const words = Array.from({ length: 50 }, (_, i) => `word${i}${"ab".repeat(i % 7)}`);
    let seed = 11;
    const word = () => words[(seed = (seed * 1103515245 + 12345) >>> 0) % words.length]!;
    // 1500 lines of about 4 KiB: 6 MiB, which the producer batches whole (linger, large batches).
    const lines = Array.from({ length: 1500 }, (_, i) => {
      let line = `line ${i}:`;
      while (line.length < 4000) line += ` ${word()}`;
      return line;
    });
    const stream = await fetch(`${server.baseUrl}/streams`, { method: "POST", body: '{"name":"kafka"}' });
    t.equal(stream.status, 201, "the Kafka stream, before any Kafka request creates it");
    for (const codec of Object.keys(codes)) {
      // Kafka's default limit is 1 MiB of batch; lz4 leaves this one larger than that.
      const created = await fetch(`${server.baseUrl}/streams/kafka/topics`, {
        method: "POST",
        body: JSON.stringify({ name: `large-${codec}`, partitions: 1, max_message_bytes: 64 * 1024 * 1024 }),
      });
      const body = await created.text();
      t.equal(
        created.status,
        201,
        created.status === 201 ? `${codec}: the topic, for batches up to 64 MiB` : body,
      );
      const produced = await kcat(
        [
          ...["-b", broker, "-P", "-t", `large-${codec}`, "-z", codec],
          ...["-X", "linger.ms=2000", "-X", "batch.num.messages=100000", "-X", "batch.size=33554432"],
          ...["-X", "message.max.bytes=67108864"],
        ],
        lines.join("\n") + "\n",
      );
      t.equal(produced.code, 0, `${codec}: ${produced.stderr}`);
      const polled = await (await fetch(
        `${server.baseUrl}/streams/kafka/topics/large-${codec}/partitions/0/messages?offset=0&count=2000&max_bytes=67108864`,
      )).json();
      t.same(
        polled.messages.map((m: { payload: string }) => Buffer.from(m.payload, "base64").toString()),
        lines,
        `${codec}: every record, in order`,
      );
    }
    const largest = largestBatches(join(dir, "data"));
    for (const [codec, code] of Object.entries(codes)) {
      const size = largest.get(code) ?? 0;
      t.ok(size > 4 * 1024 * 1024, `${codec}: a stored batch decompresses to ${size} bytes, several pieces`);
    }
  },
);
