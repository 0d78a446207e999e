import { rmSync } from "node:fs";
import { join } from "node:path";
import { StrataClient } from "../../src/client/strata_client.ts";
import { realTime, settlesWithin, waitFor } from "../../test/helpers/wait_for.ts";
import { librdkafkaPython } from "./librdkafka_python.ts";
import { type ServerProcess, startServerProcess } from "./server_process.ts";

/**
 * The reads of `bench:retention`: one partition read from offset 0 through a librdkafka consumer
 * (`kafka_load.py consume`), the same bytes from local segments (an untiered topic), from evicted
 * segments with the chunk cache empty (cold: the server restarted on an emptied cache directory,
 * the fs bucket's files in the page cache) and again (warm: the chunks cached).
 */
export interface ReadFigures {
  bytes: number;
  local_mb_s: number;
  cold_mb_s: number;
  warm_mb_s: number;
  cold_vs_local: number;
  warm_vs_local: number;
  /** Bytes of the tiered topic held only in the bucket when the reads began. */
  remote_bytes: number;
}

const valueBytes = 1024;
const loadScript = new URL("./kafka_load.py", import.meta.url).pathname;
const deadlinesMs = { listen: 120_000, request: 60_000, tiering: 600_000 };

/** Produces `bytes` into each topic, lets the tiered one tier and evict, and reads both back. */
export async function measureReads(
  configPath: string,
  dataPath: string,
  bytes: number,
  segmentSize: string,
): Promise<ReadFigures> {
  const records = Math.ceil(bytes / valueBytes);
  let server = await startServerProcess(configPath, deadlinesMs.listen);
  try {
    const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
    await settlesWithin(client.createStream("kafka"), "the stream's creation", deadlinesMs.request);
    for (const [name, tiered] of [["local", false], ["cold", true]] as const) {
      await settlesWithin(
        client.createTopic("kafka", {
          name,
          partitions: 1,
          tiered,
          segment_size: segmentSize,
          ...(tiered ? { local_retention_size: segmentSize } : {}),
        }),
        `the creation of topic ${name}`,
        deadlinesMs.request,
      );
      await load("produce", kafkaAddress(server), name, records);
    }
    const remoteBytes = await evicted(client);
    const local = await load("consume", kafkaAddress(server), "local", records);
    await server.stop("SIGTERM");
    rmSync(join(dataPath, "cache"), { recursive: true, force: true });
    server = await startServerProcess(configPath, deadlinesMs.listen);
    const cold = await load("consume", kafkaAddress(server), "cold", records);
    const warm = await load("consume", kafkaAddress(server), "cold", records);
    const mbS = (r: { bytes: number; seconds: number }) => r.bytes / 1e6 / r.seconds;
    return {
      bytes: local.bytes,
      local_mb_s: round(mbS(local)),
      cold_mb_s: round(mbS(cold)),
      warm_mb_s: round(mbS(warm)),
      cold_vs_local: round(mbS(cold) / mbS(local), 100),
      warm_vs_local: round(mbS(warm) / mbS(local), 100),
      remote_bytes: remoteBytes,
    };
  } finally {
    await server.stop("SIGTERM");
  }
}

/** Waits for the tiered topic's sealed segments to be uploaded and evicted; its remote bytes. */
async function evicted(client: StrataClient): Promise<number> {
  let remote = 0;
  await waitFor("the tiered topic's sealed segments to be evicted", async () => {
    const p = await client.partition("kafka", "cold", 0) as {
      remote_size_bytes: number;
      segments: { sealed: boolean; location: string }[];
    };
    remote = p.remote_size_bytes;
    const sealed = p.segments.filter((s) => s.sealed);
    // The local envelope keeps a segment's worth; every older sealed segment goes.
    return sealed.length > 1 && sealed.slice(0, -1).every((s) => s.location === "remote");
  }, { deadlineMs: deadlinesMs.tiering, pace: realTime(200) });
  return remote;
}

function kafkaAddress(server: ServerProcess): string {
  const address = /"msg":"kafka listening","address":"([^"]+)"/.exec(server.stderrTail())?.[1];
  if (address === undefined) throw new Error("Cannot read: the server logged no Kafka address");
  return address;
}

async function load(mode: "produce" | "consume", broker: string, topic: string, records: number) {
  const extra = mode === "produce" ? [String(valueBytes)] : [];
  const out = await new Deno.Command(librdkafkaPython, {
    args: [loadScript, mode, broker, topic, "0", String(records), ...extra],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`Cannot ${mode} ${topic}: ${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout)) as {
    records: number;
    bytes: number;
    seconds: number;
  };
}

function round(x: number, to = 10): number {
  return Math.round(x * to) / to;
}
