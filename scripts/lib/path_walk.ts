import { connect, type Socket } from "node:net";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/load_config.ts";
import { openKafkaListener } from "../../src/kafka/kafka_service.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { encodeBatch } from "../../src/log/batch/batch_codec.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { NodeNetwork } from "../../src/runtime/network/node_network.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { StrataServer } from "../../src/server/server.ts";
import { fetchBody, kafkaRequest, produceBody } from "../../test/helpers/kafka/kafka_wire.ts";
import { realTime, virtualSteps, waitFor } from "../../test/helpers/wait_for.ts";

export interface WalkedPaths {
  produce: string[];
  cold_fetch: string[];
}

const srcDir = fileURLToPath(new URL("../../src/", import.meta.url));
const topic = "walk";
const recordBytes = 100_000;
const recordsPerPartition = 40;

/** The files under `src/` (relative to it, sorted) with a function that ran since the last take. */
async function filesRun(session: Session): Promise<string[]> {
  const { result } = await session.post("Profiler.takePreciseCoverage");
  const files = new Set<string>();
  for (const script of result) {
    if (!script.url.startsWith("file://")) continue;
    const path = fileURLToPath(script.url);
    if (!path.startsWith(srcDir)) continue;
    if (script.functions.some((f) => f.ranges[0]!.count > 0)) files.add(path.slice(srcDir.length));
  }
  return [...files].sort();
}

/** How long no code of `src/` may run for the server to count as quiet. */
const quietMs = 300;

/**
 * The files run since the last take and until the server has been quiet for `quietMs`: a request's
 * work with what it set off in the background (a cold fetch's chunk fill goes on after its answer),
 * the same however fast the machine runs it.
 */
async function filesRunUntilQuiet(session: Session): Promise<string[]> {
  const files = new Set(await filesRun(session));
  await waitFor("the server to go quiet", async () => {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const more = await filesRun(session);
    for (const file of more) files.add(file);
    return more.length === 0;
  }, { deadlineMs: 60_000, pace: realTime(0) });
  return [...files].sort();
}

/** A Kafka connection that touches no code of `src/`: bytes out, whole answer frames back. */
class RawKafkaConnection {
  #buffered = new Uint8Array(0);
  #wake: (() => void) | null = null;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Uint8Array) => {
      const joined = new Uint8Array(this.#buffered.length + chunk.length);
      joined.set(this.#buffered);
      joined.set(chunk, this.#buffered.length);
      this.#buffered = joined;
      this.#wake?.();
    });
  }

  static open(port: number): Promise<RawKafkaConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: "127.0.0.1" }, () => resolve(new RawKafkaConnection(socket)));
      socket.once("error", reject);
    });
  }

  /** Sends `frame` and resolves with the answer's bytes once all of its frame has arrived. */
  async exchange(frame: Uint8Array): Promise<Uint8Array> {
    this.socket.write(frame);
    for (;;) {
      if (this.#buffered.length >= 4) {
        const size = new DataView(this.#buffered.buffer).getInt32(0);
        if (this.#buffered.length >= 4 + size) {
          const answer = this.#buffered.slice(4, 4 + size);
          this.#buffered = this.#buffered.slice(4 + size);
          return answer;
        }
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

async function partitionStats(server: StrataServer, partition: number): Promise<Record<string, number>> {
  const answer = await server.handler(
    new Request(`http://walk/streams/kafka/topics/${topic}/partitions/${partition}`),
  );
  return await answer.json();
}

/** A server with the tiered topic `walk` of two partitions, each with evicted segments. */
async function tieredServer(dir: string, clock: VirtualClock): Promise<StrataServer> {
  const { config } = loadConfig("", "walk", { STRATA_SYSTEM_PATH: join(dir, "data") });
  const server = await StrataServer.open({
    config,
    logger: silentLogger(),
    clock,
    disk: new NodeDisk(),
    rng: new Rng(7),
  });
  const post = (path: string, body: unknown) =>
    server.handler(new Request(`http://walk${path}`, { method: "POST", body: JSON.stringify(body) }));
  await post("/streams", { name: "kafka" });
  const created = await post("/streams/kafka/topics", {
    name: topic,
    partitions: 2,
    segment_size: "1 MiB",
    local_retention_size: "1 MiB",
  });
  if (created.status !== 201) throw new Error(`Cannot create the topic: ${await created.text()}`);
  const payload = btoa(String.fromCharCode(...new Uint8Array(recordBytes).fill(7)));
  for (let i = 0; i < recordsPerPartition; i++) {
    for (const partition of [0, 1]) {
      await post(`/streams/kafka/topics/${topic}/messages`, { partition, messages: [{ payload }] });
    }
  }
  const evicted = async () => {
    for (const partition of [0, 1]) {
      const stats = await partitionStats(server, partition) as unknown as {
        segments: { location: string }[];
      };
      if (stats.segments[0]?.location !== "remote") return false;
    }
    return true;
  };
  await waitFor("the first segment of each partition evicted", evicted, {
    deadlineMs: 120_000,
    pace: virtualSteps(clock, 20, 2),
  });
  return server;
}

/** Walks the two paths; see scripts/path_walk.ts. */
export async function walkPaths(): Promise<WalkedPaths> {
  const dir = await Deno.makeTempDir({ prefix: "strata-walk-" });
  const clock = new VirtualClock();
  const server = await tieredServer(dir, clock);
  const { config } = loadConfig("", "walk", { STRATA_KAFKA_ADDRESS: "127.0.0.1:0" });
  const listener = await openKafkaListener({
    config: config.kafka,
    catalog: server.catalog,
    data: server.dataPlane,
    network: new NodeNetwork(),
    registry: server.registry,
    clock,
    turn: () => server.pieceGate.turn(),
    groups: server.groups,
    logger: silentLogger(),
  });
  const kafka = await RawKafkaConnection.open(listener.address.port);
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
    const batch = encodeBatch(0, clock.wallMs(), [{ key: null, headers: {}, payload: new Uint8Array(1000) }]);
    const produce = (id: number) => kafkaRequest(apiKey.produce, 7, id, produceBody(topic, 0, batch, -1));
    const fetch = (id: number, partition: number) =>
      kafkaRequest(apiKey.fetch, 11, id, fetchBody(topic, partition, 0, 0, 64 * 1024));
    const requests = { produce: produce(2), fetchWarm: fetch(3, 1), fetchMeasured: fetch(4, 0) };
    // Work the last ticks started (uploads, evictions, housekeeping) finishes on real time: none of
    // it is counted on a path.
    await filesRunUntilQuiet(session);
    await kafka.exchange(produce(1));
    await filesRunUntilQuiet(session);
    await kafka.exchange(requests.produce);
    const producePath = await filesRunUntilQuiet(session);
    await kafka.exchange(requests.fetchWarm);
    await filesRunUntilQuiet(session);
    await kafka.exchange(requests.fetchMeasured);
    const coldFetchPath = await filesRunUntilQuiet(session);
    return { produce: producePath, cold_fetch: coldFetchPath };
  } finally {
    session.disconnect();
    kafka.socket.destroy();
    await listener.close();
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
}
