import { Counter, type Registry } from "prom-client";
import type { PollReport } from "./read_replica_follower.ts";

/** The read-replica follower's counters (docs/DESIGN.md, "Read replicas"). */
export class ReadReplicaMetrics {
  readonly polls: Counter;
  readonly manifestReads: Counter<"outcome">;
  readonly segmentsPlanted: Counter;
  readonly segmentsRetired: Counter;
  readonly segmentsReplaced: Counter;
  readonly failures: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.polls = new Counter({
      name: "strata_read_replica_polls_total",
      help: "Polls of the read-replica topics' sources (one listing of each source topic's manifests).",
      registers,
    });
    this.manifestReads = new Counter({
      name: "strata_read_replica_manifest_reads_total",
      help:
        "Conditional GETs of changed partition manifests: read, or not_modified (the ETag had not changed after all).",
      labelNames: ["outcome"],
      registers,
    });
    this.segmentsPlanted = new Counter({
      name: "strata_read_replica_segments_planted_total",
      help: "Segments of the sources planted in read replicas as markers.",
      registers,
    });
    this.segmentsRetired = new Counter({
      name: "strata_read_replica_segments_retired_total",
      help: "Segments read replicas retired because their source's retention deleted them.",
      registers,
    });
    this.segmentsReplaced = new Counter({
      name: "strata_read_replica_segments_replaced_total",
      help: "Planted segments read replicas replaced by their source's merges of them.",
      registers,
    });
    this.failures = new Counter({
      name: "strata_read_replica_poll_failures_total",
      help: "Source topics or partitions a poll could not follow (logged with the error).",
      registers,
    });
  }

  /** Counts what one poll did. */
  record(report: PollReport): void {
    this.polls.inc();
    this.manifestReads.inc({ outcome: "read" }, report.manifestsRead);
    this.manifestReads.inc({ outcome: "not_modified" }, report.notModified);
    this.segmentsPlanted.inc(report.segmentsPlanted);
    this.segmentsRetired.inc(report.segmentsRetired);
    this.segmentsReplaced.inc(report.segmentsReplaced);
    this.failures.inc(report.failures);
  }
}
