import { logLevels } from "../runtime/logger.ts";
import type { ConfigSchema } from "./key_spec.ts";

/**
 * Every configuration key Strata knows, with its type, default and bounds. The shipped
 * `config.toml` lists the same keys with the same defaults (a test holds the two together), and
 * `docs/CONFIG.md` explains them. Durations are in milliseconds and sizes in bytes once parsed.
 */
export const configSchema = {
  system: {
    /** The data directory: logs, superblocks, the local object store and the cache live under it. */
    path: { kind: "string", default: "./data", nonEmpty: true },
    /** How often each shard's pump fires the consensus tick. */
    tick_interval: { kind: "duration", default: 10, min: 1, max: 1000 },
    /** Logical shards, each with its own pump; partitions are assigned by a stable hash. */
    shards: { kind: "int", default: 1, min: 1, max: 64 },
    /** Names this cluster in object keys; empty generates a random one at first boot. */
    cluster_id: { kind: "string", default: "" },
    /** "always": a produce is acknowledged after its fsync (group commit); "interval": after its write. */
    fsync: { kind: "enum", default: "always", values: ["always", "interval"] },
    /** With fsync = "interval", how often the active segments are fsynced. */
    fsync_interval: { kind: "duration", default: 1000, min: 1, max: 3_600_000 },
    /** Log bytes between two sparse index entries. */
    index_interval_bytes: { kind: "bytes", default: 4096, min: 256, max: 1024 * 1024 },
    /** Writes queued per partition before producers get 503. */
    write_queue_max: { kind: "int", default: 4096, min: 1, max: 1_000_000 },
  },
  http: {
    /** Where the HTTP API listens; port 0 picks a free port. */
    address: { kind: "address", default: "127.0.0.1:8080" },
    /** Largest request body accepted; larger ones get 413. */
    max_request_bytes: { kind: "bytes", default: 16 * 1024 * 1024, min: 1024, max: 1024 * 1024 * 1024 },
    /** Bearer tokens; when any is set, every request needs one. Secret: never printed. */
    tokens: { kind: "strings", default: [], secret: true, itemsMax: 64 },
  },
  log: {
    level: { kind: "enum", default: "info", values: logLevels },
  },
} as const satisfies ConfigSchema;
