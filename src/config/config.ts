import type { FsyncPolicy } from "../log/log_config.ts";
import type { LogLevel } from "../runtime/logger.ts";
import type { Address, ValidatedConfig } from "./key_spec.ts";

/** The typed configuration the server runs on: names carry their units. */
export interface Config {
  system: {
    path: string;
    tickIntervalMs: number;
    shards: number;
    clusterId: string;
    fsync: FsyncPolicy;
    fsyncIntervalMs: number;
    indexIntervalBytes: number;
    writeQueueMax: number;
  };
  http: {
    address: Address;
    maxRequestBytes: number;
    tokens: readonly string[];
  };
  log: {
    level: LogLevel;
  };
}

/** Maps validated snake_case keys to the typed object; validation already checked every value. */
export function toConfig(v: ValidatedConfig): Config {
  const system = v["system"]!;
  const http = v["http"]!;
  const log = v["log"]!;
  return {
    system: {
      path: system["path"] as string,
      tickIntervalMs: system["tick_interval"] as number,
      shards: system["shards"] as number,
      clusterId: system["cluster_id"] as string,
      fsync: system["fsync"] as FsyncPolicy,
      fsyncIntervalMs: system["fsync_interval"] as number,
      indexIntervalBytes: system["index_interval_bytes"] as number,
      writeQueueMax: system["write_queue_max"] as number,
    },
    http: {
      address: http["address"] as Address,
      maxRequestBytes: http["max_request_bytes"] as number,
      tokens: http["tokens"] as readonly string[],
    },
    log: { level: log["level"] as LogLevel },
  };
}
