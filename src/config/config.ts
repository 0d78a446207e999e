import type { LogLevel } from "../runtime/logger.ts";
import type { Address, ValidatedConfig } from "./key_spec.ts";

/** The typed configuration the server runs on: names carry their units. */
export interface Config {
  system: {
    path: string;
    tickIntervalMs: number;
  };
  http: {
    address: Address;
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
    },
    http: { address: http["address"] as Address },
    log: { level: log["level"] as LogLevel },
  };
}
