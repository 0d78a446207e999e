import { librdkafkaPython, librdkafkaUnavailable } from "../librdkafka_python.ts";
import { readFileSync, writeFileSync } from "node:fs";
import { benchConfigText } from "../bench_config.ts";
import { natsUnavailable, rabbitmqUnavailable, startNats, startRabbitmq } from "./peer_servers.ts";
import { startServerProcess } from "../server_process.ts";

/**
 * The servers and clients bench:peers measures: each variant is a server started fresh for it (in a
 * directory of its own, stopped by PID) and the process that loads it (`peer_load_*`). Strata is
 * measured through its Kafka listener with librdkafka and with kafkajs, in the two durability modes;
 * NATS and RabbitMQ with their own clients, in their defaults (neither syncs each write).
 */

export type DurabilityMode = "page_cache" | "durable";

/** A server running for one variant's phases. */
export interface RunningPeer {
  pid: number;
  /** What the load connects to. */
  address: string;
  /** Strata's HTTP API, for its tick lateness; null for the peers. */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

export interface Variant {
  /** The key of the JSON report within its mode: "strata", "strata_kafkajs", "nats", "rabbitmq". */
  key: string;
  mode: DurabilityMode;
  server: "strata" | "nats" | "rabbitmq";
  /** What measures it, for the report. */
  client: string;
  /** Why it cannot run here, or null. */
  unavailable(): Promise<string | null>;
  start(dir: string, portBase: number): Promise<RunningPeer>;
  /** The load's command for its JSON arguments. */
  loadCommand(argsJson: string): string[];
}

const here = new URL(".", import.meta.url).pathname;
const python = librdkafkaPython;
const denoLoad =
  (script: string) => (argsJson: string) => ["deno", "run", "-A", `${here}${script}`, argsJson];

/** How long Strata may take to start listening. */
const strataStartDeadlineMs = 60_000;

/** The topic every Strata variant loads: 4 partitions, untiered (the peers upload nothing either). */
export const strataTopic = { name: "bench", tiered: false };

/** Strata as `deno task server` runs it, on its shipped config but for the data path, ports and `fsync`. */
async function startStrata(dir: string, portBase: number, fsync: "always" | "interval", partitions: number) {
  const configPath = `${dir}/strata.toml`;
  const shipped = readFileSync(new URL("../../../config.toml", import.meta.url), "utf8");
  const text = benchConfigText(shipped, `${dir}/strata-data`, null, fsync);
  writeFileSync(configPath, text);
  const kafka = `127.0.0.1:${portBase}`;
  const server = await startServerProcess(configPath, strataStartDeadlineMs, { STRATA_KAFKA_ADDRESS: kafka });
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${server.baseUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`Cannot set Strata up: POST ${path} answered ${await response.text()}`);
  };
  try {
    await post("/streams", { name: "kafka" });
    await post("/streams/kafka/topics", { ...strataTopic, partitions });
  } catch (error) {
    await server.stop("SIGKILL");
    throw error;
  }
  return {
    pid: server.pid,
    address: kafka,
    metricsUrl: `${server.baseUrl}/metrics`,
    stop: async () => void await server.stop("SIGTERM"),
  };
}

/** Every variant of the benchmark, for `partitions` partitions. */
export function variants(partitions: number): Variant[] {
  const strata = (key: string, mode: DurabilityMode, client: string, load: (a: string) => string[]) => ({
    key,
    mode,
    server: "strata" as const,
    client,
    unavailable: key === "strata_kafkajs" ? () => Promise.resolve(null) : librdkafkaUnavailable,
    start: (dir: string, portBase: number) =>
      startStrata(dir, portBase, mode === "durable" ? "always" : "interval", partitions),
    loadCommand: load,
  });
  const librdkafka = (argsJson: string) => [python, `${here}peer_load_kafka.py`, argsJson];
  return [
    strata("strata", "page_cache", "librdkafka 2.0 (python3-confluent-kafka)", librdkafka),
    strata("strata_kafkajs", "page_cache", "kafkajs 2.2", denoLoad("peer_load_kafkajs.ts")),
    strata("strata", "durable", "librdkafka 2.0 (python3-confluent-kafka)", librdkafka),
    {
      key: "nats",
      mode: "page_cache",
      server: "nats",
      client: "nats 2.29, raw publish with a reply subject per record",
      unavailable: natsUnavailable,
      start: async (dir, portBase) => ({ ...(await startNats(dir, portBase)), metricsUrl: null }),
      loadCommand: denoLoad("peer_load_nats.ts"),
    },
    {
      key: "rabbitmq",
      mode: "page_cache",
      server: "rabbitmq",
      client: "rabbitmq-stream-js-client 1.0, record by record in frames of 100, with confirms",
      unavailable: rabbitmqUnavailable,
      start: async (dir, portBase) => ({
        ...(await startRabbitmq(dir, portBase, portBase + 10)),
        metricsUrl: null,
      }),
      loadCommand: denoLoad("peer_load_rabbitmq.ts"),
    },
  ];
}
