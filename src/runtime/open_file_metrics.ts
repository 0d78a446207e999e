import { Counter, Gauge, type Registry } from "prom-client";
import type { OpenFileCache } from "./open_file_cache.ts";

/** The open-file cache's gauges and counter, read from it at scrape time. */
export function registerOpenFileMetrics(registry: Registry, cache: OpenFileCache): void {
  new Gauge({
    name: "strata_open_files",
    help: "Handles of files held open between uses (active segments' .log and .index), at most " +
      "[system] max_open_files.",
    registers: [registry],
    collect() {
      this.set(cache.openFiles);
    },
  });
  new Gauge({
    name: "strata_open_file_waiters",
    help: "Disk operations waiting for a file handle because every one of max_open_files is in use.",
    registers: [registry],
    collect() {
      this.set(cache.waiting);
    },
  });
  let counted = 0;
  new Counter({
    name: "strata_open_file_evictions_total",
    help: "Idle file handles closed (synced first when written) to make room under max_open_files.",
    registers: [registry],
    collect() {
      this.inc(cache.evictionsTotal - counted);
      counted = cache.evictionsTotal;
    },
  });
}
