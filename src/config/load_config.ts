import { parse, TomlError } from "smol-toml";
import { type Config, toConfig } from "./config.ts";
import { ConfigError } from "./config_error.ts";
import type { ConfigSchema, ValidatedConfig } from "./key_spec.ts";
import { configSchema } from "./schema.ts";
import { validateConfig } from "./validate_config.ts";

export interface LoadedConfig {
  config: Config;
  /** Secret values to scrub from every log line. */
  secrets: string[];
}

/**
 * Parses the text of a TOML config file, applies `STRATA_*` environment overrides and validates
 * the result. `sourceName` (the file's path) appears in syntax errors. Pure: the caller reads the
 * file and passes the environment, so this runs the same under Node, Deno and the simulator.
 */
export function loadConfig(
  text: string,
  sourceName: string,
  env: Record<string, string | undefined>,
): LoadedConfig {
  let document: Record<string, unknown>;
  try {
    document = parse(text) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) {
      throw new ConfigError(sourceName, `invalid TOML at line ${error.line}, column ${error.column}`, {
        cause: error,
      });
    }
    throw error;
  }
  const validated = validateConfig(configSchema, document, env);
  const config = toConfig(validated);
  applyAwsEnvironment(config, env);
  checkTieredStorage(config);
  checkCache(config);
  checkKafka(config);
  checkGroups(config);
  checkCluster(config);
  const s3 = config.tieredStorage.s3;
  const secrets = [
    ...secretValues(configSchema, validated),
    ...config.kafka.users.values(),
    s3.accessKey,
    s3.secretKey,
    s3.sessionToken,
  ]
    .filter((x) => x !== "");
  return { config, secrets };
}

export function secretValues(schema: ConfigSchema, validated: ValidatedConfig): string[] {
  const secrets: string[] = [];
  for (const [section, keys] of Object.entries(schema)) {
    for (const [key, spec] of Object.entries(keys)) {
      const value = validated[section]?.[key];
      if (spec.kind === "string" && spec.secret && typeof value === "string" && value !== "") {
        secrets.push(value);
      }
      if (spec.kind === "strings" && spec.secret && Array.isArray(value)) secrets.push(...value);
    }
  }
  return secrets;
}

/** The usual AWS variables fill the S3 credentials and region the config leaves empty. */
function applyAwsEnvironment(config: Config, env: Record<string, string | undefined>): void {
  const s3 = config.tieredStorage.s3;
  if (s3.accessKey === "") s3.accessKey = env["AWS_ACCESS_KEY_ID"] ?? "";
  if (s3.secretKey === "") s3.secretKey = env["AWS_SECRET_ACCESS_KEY"] ?? "";
  if (s3.sessionToken === "") s3.sessionToken = env["AWS_SESSION_TOKEN"] ?? "";
  if (s3.region === "") s3.region = env["AWS_REGION"] ?? env["AWS_DEFAULT_REGION"] ?? "us-east-1";
}

/** Chunk files are written in 4 KiB blocks (direct I/O among them). */
export const chunkAlignmentBytes = 4096;

/**
 * The smallest cache budget that lets every shard's fetches in flight hold their chunks with as much
 * again to serve from: 2 × `chunk_size` × `fetch_concurrency` × `shards`.
 */
export function cacheBudgetMinBytes(config: Config): number {
  const t = config.tieredStorage;
  return 2 * t.cache.chunkBytes * t.fetchConcurrency * config.system.shards;
}

/** Cross-key rules of the chunk cache: aligned chunks, and a budget that fits the fetches in flight. */
function checkCache(config: Config): void {
  const cache = config.tieredStorage.cache;
  if (cache.chunkBytes % chunkAlignmentBytes !== 0) {
    throw new ConfigError(
      "[tiered_storage.cache] chunk_size",
      `must be a multiple of ${chunkAlignmentBytes} bytes, got ${cache.chunkBytes}`,
    );
  }
  const minBytes = cacheBudgetMinBytes(config);
  if (cache.sizeBytes < minBytes) {
    throw new ConfigError(
      "[tiered_storage.cache] size",
      `must be at least 2 × chunk_size × fetch_concurrency × shards = ${minBytes} bytes, got ${cache.sizeBytes}`,
    );
  }
}

/** Whether `hostname` names this host's loopback interface only. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * Cross-key rules of the Kafka listener: an advertised address is "host:port" with a port, and a
 * listener without authentication serves a loopback address unless `allow_unauthenticated` says so.
 */
function checkKafka(config: Config): void {
  const kafka = config.kafka;
  if (!kafka.enabled) return;
  if (kafka.advertisedAddress?.port === 0) {
    throw new ConfigError("[kafka] advertised_address", "needs the port clients connect to, got port 0");
  }
  const wildcard = kafka.address.hostname === "0.0.0.0" || kafka.address.hostname === "::";
  if (wildcard && kafka.advertisedAddress === null) {
    throw new ConfigError(
      "[kafka] advertised_address",
      `required when the listener's address is the wildcard ${kafka.address.hostname}: clients need a host to reach`,
    );
  }
  if (!isLoopbackHost(kafka.address.hostname) && kafka.users.size === 0 && !kafka.allowUnauthenticated) {
    throw new ConfigError(
      "[kafka] address",
      `${kafka.address.hostname} is not a loopback address and the listener has no authentication; ` +
        "set users for SASL/PLAIN, or allow_unauthenticated = true to serve it anyway",
    );
  }
}

/** Cross-key rules of `[groups]`: the session timeout's bounds are in order. */
function checkGroups(config: Config): void {
  const groups = config.groups;
  if (groups.sessionTimeoutMinMs > groups.sessionTimeoutMaxMs) {
    throw new ConfigError(
      "[groups] group_min_session_timeout",
      `${groups.sessionTimeoutMinMs} ms exceeds group_max_session_timeout ${groups.sessionTimeoutMaxMs} ms`,
    );
  }
}

/** The shortest cluster secret accepted. */
export const clusterSecretCharsMin = 16;

/**
 * Cross-key rules of cluster mode: etcd URLs, a lease in whole seconds, a secret, at most as many
 * in-sync replicas required as replicas, and the Kafka listener (replicas fetch through it).
 */
function checkCluster(config: Config): void {
  const cluster = config.cluster;
  if (!cluster.enabled) return;
  if (cluster.etcdEndpoints.length === 0) {
    throw new ConfigError("[cluster] etcd_endpoints", "needs at least one etcd member's URL");
  }
  for (const endpoint of cluster.etcdEndpoints) {
    if (!/^https?:\/\/[^/\s]+:\d+\/?$/.test(endpoint)) {
      throw new ConfigError(
        "[cluster] etcd_endpoints",
        `expected http(s)://host:port, got ${JSON.stringify(endpoint)}`,
      );
    }
  }
  if (cluster.leaseTtlMs % 1000 !== 0) {
    throw new ConfigError(
      "[cluster] lease_ttl",
      `etcd leases last whole seconds, got ${cluster.leaseTtlMs} ms`,
    );
  }
  if (cluster.secret.length < clusterSecretCharsMin) {
    throw new ConfigError(
      "[cluster] secret",
      `required in cluster mode, at least ${clusterSecretCharsMin} characters (STRATA_CLUSTER_SECRET from the environment)`,
    );
  }
  if (cluster.minInsyncReplicas > cluster.replicationFactor) {
    throw new ConfigError(
      "[cluster] min_insync_replicas",
      `${cluster.minInsyncReplicas} exceeds replication_factor ${cluster.replicationFactor}`,
    );
  }
  if (!config.kafka.enabled) {
    throw new ConfigError(
      "[kafka] enabled",
      "cluster mode needs the Kafka listener: replicas fetch through it",
    );
  }
  if (config.kafka.advertisedAddress?.port === 0 || config.http.advertisedAddress?.port === 0) {
    throw new ConfigError("[http] advertised_address", "needs the port other nodes connect to, got port 0");
  }
  // Each node registers its addresses before it listens: they must be known from the config.
  if (config.http.address.port === 0 && config.http.advertisedAddress === null) {
    throw new ConfigError(
      "[http] address",
      "cluster mode needs a fixed port (or advertised_address), got port 0",
    );
  }
  if (config.kafka.address.port === 0 && config.kafka.advertisedAddress === null) {
    throw new ConfigError(
      "[kafka] address",
      "cluster mode needs a fixed port (or advertised_address), got port 0",
    );
  }
}

/** Cross-key rules: an enabled s3 backend needs its bucket and credentials. */
function checkTieredStorage(config: Config): void {
  const t = config.tieredStorage;
  if (!t.enabled || t.backend !== "s3") return;
  if (t.s3.bucket === "") {
    throw new ConfigError("[tiered_storage.s3] bucket", "required when the s3 backend is enabled");
  }
  if (t.s3.accessKey === "" || t.s3.secretKey === "") {
    throw new ConfigError(
      "[tiered_storage.s3] access_key",
      "credentials are required when the s3 backend is enabled (access_key and secret_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
    );
  }
  if (t.s3.endpoint !== "" && !/^https?:\/\/[^/]+\/?$/.test(t.s3.endpoint)) {
    throw new ConfigError(
      "[tiered_storage.s3] endpoint",
      `expected http(s)://host[:port], got ${JSON.stringify(t.s3.endpoint)}`,
    );
  }
}
