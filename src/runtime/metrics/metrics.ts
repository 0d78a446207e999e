import { Registry } from "prom-client";

/**
 * The process's one metrics registry is created by the server and passed down; tests make their
 * own, so no module keeps a global registry that two servers in one test process would share.
 */
export function createMetricsRegistry(): Registry {
  return new Registry();
}

export type { Registry };
