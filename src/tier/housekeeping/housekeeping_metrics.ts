import { Counter, Gauge, type Registry } from "prom-client";

/** What a shard's housekeeping reports at scrape time. */
export interface HousekeepingGaugeSource {
  /** Keys listed for deletion and queued for later runs, over the shard's partitions. */
  pendingDeletions(): number;
}

/** Housekeeping's counters and gauges, shared by every shard in one registry. */
export class HousekeepingMetrics {
  readonly runs: Counter;
  readonly requests: Counter;
  readonly deletedObjects: Counter<"reason">;
  readonly failures: Counter<"job">;
  readonly orphansFound: Counter;
  readonly manifestsUploaded: Counter;
  readonly verifyAnomalies: Counter<"kind">;
  readonly verifyReuploads: Counter;
  readonly merges: Counter<"outcome">;
  readonly mergedBytes: Counter;
  readonly #sources = new Set<HousekeepingGaugeSource>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.runs = new Counter({
      name: "strata_housekeeping_runs_total",
      help: "Housekeeping runs started.",
      registers,
    });
    this.requests = new Counter({
      name: "strata_housekeeping_requests_total",
      help: "Object-store requests housekeeping spent (each run at most request_quota).",
      registers,
    });
    this.deletedObjects = new Counter({
      name: "strata_housekeeping_deleted_objects_total",
      help:
        "Objects deleted: below a retention watermark (watermark), of an incarnation that is gone (orphan), " +
        "or of segments a merge replaced (replaced).",
      labelNames: ["reason"],
      registers,
    });
    this.failures = new Counter({
      name: "strata_housekeeping_failures_total",
      help:
        "Housekeeping jobs that failed (delete_below, upload_manifest, verify, orphan_sweep); retried next run.",
      labelNames: ["job"],
      registers,
    });
    this.orphansFound = new Counter({
      name: "strata_housekeeping_orphans_found_total",
      help: "Objects the orphan sweep found whose incarnation no longer exists.",
      registers,
    });
    this.manifestsUploaded = new Counter({
      name: "strata_housekeeping_manifests_uploaded_total",
      help: "Partition manifests uploaded under meta/.",
      registers,
    });
    this.verifyAnomalies = new Counter({
      name: "strata_tier_verify_anomalies_total",
      help: "Objects below the floor found missing or different from their marker by the verify pass.",
      labelNames: ["kind"],
      registers,
    });
    this.verifyReuploads = new Counter({
      name: "strata_tier_verify_reuploads_total",
      help: "Missing objects the verify pass uploaded again from a local .log still on disk.",
      registers,
    });
    this.merges = new Counter({
      name: "strata_tier_merges_total",
      help: "Merges of small remote segments: merged, or anomaly (an object not as its marker says).",
      labelNames: ["outcome"],
      registers,
    });
    this.mergedBytes = new Counter({
      name: "strata_tier_merged_bytes_total",
      help: "Bytes of the merged objects the merger uploaded.",
      registers,
    });
    const sources = this.#sources;
    new Gauge({
      name: "strata_housekeeping_pending_deletions",
      help: "Objects below retention watermarks listed for deletion and queued for a later run " +
        "(at most delete_pending_per_partition per partition; the rest is listed again).",
      registers,
      collect() {
        this.set([...sources].reduce((n, s) => n + s.pendingDeletions(), 0));
      },
    });
  }

  addSource(source: HousekeepingGaugeSource): void {
    this.#sources.add(source);
  }

  removeSource(source: HousekeepingGaugeSource): void {
    this.#sources.delete(source);
  }
}
