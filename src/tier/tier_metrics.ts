import { labelledGaugesOf } from "../runtime/metrics/labelled_series.ts";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Where one tiered partition's bytes are, and its remote indexes held in memory. */
export interface PartitionBytes {
  localBytes: number;
  remoteBytes: number;
  remoteSegments: number;
  indexCacheBytes: number;
  /** Remote segments that are merges, and small ones the merger may still join. */
  mergedSegments: number;
  smallRemoteSegments: number;
}

/** What a tier service reports at scrape time; the gauges are read from state, never kept by hand. */
export interface TierGaugeSource {
  uploadsInFlight(): number;
  /** Lowest offset pinned by a non-transient upload failure, or null. */
  stalledOffset(): number | null;
  stalledPartitions(): number;
  /** Local bytes above each partition's envelope, summed. */
  localOvershootBytes(): number;
  /** Partitions whose floor command failed to commit and has not committed since. */
  floorRetriesWaiting(): number;
  /** Committed replaces (merges) the chains cannot take yet (a follower's copies still local). */
  replacesWaiting(): number;
  floors(): Iterable<[string, number]>;
  partitionBytes(): Iterable<[string, PartitionBytes]>;
}

/** The tier services' metrics in one registry, shared by every shard. */
export class TierMetrics {
  readonly uploadsStarted: Counter;
  readonly uploadsCompleted: Counter;
  readonly uploadsFailed: Counter<"profile">;
  readonly uploadedBytes: Counter;
  readonly uploadDuration: Histogram;
  readonly segmentsGivenUp: Counter;
  readonly anomalies: Counter;
  readonly floorSubmissionsFailed: Counter;
  readonly transferredSegments: Counter;
  readonly transferredBytes: Counter;
  readonly segmentsReplaced: Counter;
  readonly #sources = new Set<TierGaugeSource>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.uploadsStarted = new Counter({
      name: "strata_tier_uploads_started_total",
      help: "Segment uploads started, resubmissions included.",
      registers,
    });
    this.uploadsCompleted = new Counter({
      name: "strata_tier_uploads_completed_total",
      help: "Segments whose .log and .index are in the store.",
      registers,
    });
    this.uploadsFailed = new Counter({
      name: "strata_tier_uploads_failed_total",
      help:
        "Failed segment uploads by retry profile (transient, non_transient); each is retried, never skipped. " +
        "Request-level retries are strata_objectstore_retries_total.",
      labelNames: ["profile"],
      registers,
    });
    this.uploadedBytes = new Counter({
      name: "strata_tier_uploaded_bytes_total",
      help: "Segment bytes uploaded (.log, .index, .producers and .txnindex).",
      registers,
    });
    this.uploadDuration = new Histogram({
      name: "strata_tier_upload_duration_seconds",
      help: "Duration of one segment upload.",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 90, 360],
      registers,
    });
    this.segmentsGivenUp = new Counter({
      name: "strata_tier_segments_given_up_total",
      help: "Segments deleted by total retention before they were uploaded.",
      registers,
    });
    this.anomalies = new Counter({
      name: "strata_tier_upload_anomalies_total",
      help: "Objects found with other bytes; never overwritten.",
      registers,
    });
    this.transferredSegments = new Counter({
      name: "strata_tier_state_transfer_segments_total",
      help: "Tiered segments new replicas took from the bucket's metadata instead of copying them.",
      registers,
    });
    this.transferredBytes = new Counter({
      name: "strata_tier_state_transfer_bytes_total",
      help: "Bytes of the tiered segments new replicas took from the bucket's metadata, none copied.",
      registers,
    });
    this.floorSubmissionsFailed = new Counter({
      name: "strata_tier_floor_submissions_failed_total",
      help: "Floor commands the control log did not commit; each is submitted again unless fenced.",
      registers,
    });
    this.segmentsReplaced = new Counter({
      name: "strata_tier_segments_replaced_total",
      help: "Remote segments a committed replace (a merge) took out of their partition's chain.",
      registers,
    });
    registerGauges(registers, this.#sources);
    registerPartitionGauges(registers, this.#sources);
  }

  addSource(source: TierGaugeSource): void {
    this.#sources.add(source);
  }
}

/** The gauges, read from the sources at scrape time. */
function registerGauges(registers: Registry[], sources: ReadonlySet<TierGaugeSource>): void {
  new Gauge({
    name: "strata_tier_uploads_in_flight",
    help: "Segment uploads in flight.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.uploadsInFlight(), 0));
    },
  });
  new Gauge({
    name: "strata_tier_upload_stalled_offset",
    help: "The lowest offset where uploads are stalled (a non-transient failure, or upload_stall_after " +
      "without the floor moving while uploads fail or hang); 0 when none.",
    registers,
    collect() {
      const pinned = [...sources].map((s) => s.stalledOffset()).filter((x): x is number => x !== null);
      this.set(pinned.length === 0 ? 0 : Math.min(...pinned));
    },
  });
  new Gauge({
    name: "strata_tier_upload_stalled_partitions",
    help: "Partitions whose uploads are stalled (see strata_tier_upload_stalled_offset).",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.stalledPartitions(), 0));
    },
  });
  new Gauge({
    name: "strata_tier_local_overshoot_bytes",
    help: "Local bytes of sealed segments the local envelope (age or size) wants gone, still local.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.localOvershootBytes(), 0));
    },
  });
  new Gauge({
    name: "strata_tier_floor_retries_waiting",
    help: "Partitions whose floor command failed to commit and has not committed since.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.floorRetriesWaiting(), 0));
    },
  });
  new Gauge({
    name: "strata_tier_replaces_waiting",
    help: "Committed replaces of remote segments (merges) a replica's chain cannot take yet.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.replacesWaiting(), 0));
    },
  });
}

/** The per-partition gauges of `PartitionBytes`: name, help, and the field each reads. */
const partitionByteGauges: [string, string, keyof PartitionBytes][] = [
  [
    "strata_tier_partition_local_bytes",
    "Bytes per tiered partition whose .log is on local disk.",
    "localBytes",
  ],
  [
    "strata_tier_partition_remote_bytes",
    "Bytes per tiered partition held only in the object store (evicted segments).",
    "remoteBytes",
  ],
  [
    "strata_tier_partition_remote_segments",
    "Segments per tiered partition held only in the object store (evicted).",
    "remoteSegments",
  ],
  [
    "strata_tier_partition_index_cache_bytes",
    "Bytes of each tiered partition's remote segment indexes held in its shard's index cache.",
    "indexCacheBytes",
  ],
  [
    "strata_tier_partition_merged_segments",
    "Remote segments per tiered partition that are merges of smaller ones.",
    "mergedSegments",
  ],
  [
    "strata_tier_partition_small_remote_segments",
    "Remote segments per tiered partition under half of segment_size: what the merger may still join.",
    "smallRemoteSegments",
  ],
];

/**
 * The gauges labelled by partition, read from every source at scrape time and written a piece at a
 * time (`LabelledGauges`): one series per partition would otherwise hold the event loop per scrape.
 */
function registerPartitionGauges(registers: Registry[], sources: ReadonlySet<TierGaugeSource>): void {
  const perPartition = (read: (s: TierGaugeSource) => Iterable<[string, number]>) =>
    function* (): Iterable<[string, number]> {
      for (const source of sources) yield* read(source);
    };
  for (const registry of registers) {
    const gauges = labelledGaugesOf(registry);
    for (const [name, help, field] of partitionByteGauges) {
      gauges.add({
        name,
        help,
        labelName: "partition",
        entries: perPartition(function* (s) {
          for (const [partition, bytes] of s.partitionBytes()) yield [partition, bytes[field]];
        }),
      });
    }
    gauges.add({
      name: "strata_tier_floor_offset",
      help: "The tiered floor per partition (exclusive).",
      labelName: "partition",
      entries: perPartition((s) => s.floors()),
    });
  }
}
