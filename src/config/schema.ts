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
  },
  http: {
    /** Where the HTTP API listens; port 0 picks a free port. */
    address: { kind: "address", default: "127.0.0.1:8080" },
  },
  log: {
    level: { kind: "enum", default: "info", values: logLevels },
  },
} as const satisfies ConfigSchema;
