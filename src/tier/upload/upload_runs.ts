import { rethrowBug } from "../../runtime/assert.ts";
import type { Segment } from "../../log/segment/segment.ts";
import { classify, type ErrorClass } from "../../objectstore/object_store_errors.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import { DiskError } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { Rng } from "../../runtime/rng.ts";
import { incarnationOf, segmentKeys } from "../bucket/object_keys.ts";
import { sealedSegmentOf, type UploadDeps, type UploadOutcome, uploadSegment } from "./segment_uploader.ts";
import type { TierMetrics } from "../tier_metrics.ts";
import type { TieredPartition } from "../tier_service.ts";
import type { UploadEffect } from "./upload_state.ts";

export type StartUpload = Extract<UploadEffect, { kind: "start_upload" }>;

/** How an upload the core started ended, as the core's next event. */
export type UploadReport =
  /** The segment is gone (total retention took it) before or while it uploaded. */
  | { kind: "segment_deleted"; partition: string; startOffset: number }
  | { kind: "uploaded"; partition: string; identity: string }
  | {
    kind: "failed";
    partition: string;
    identity: string;
    errorClass: ErrorClass;
    /** An object already there with other bytes. */
    anomaly?: string;
    /** A uniform draw in [0, 1) for the retry's jitter. */
    random: number;
  };

export interface UploadRunsDeps {
  clock: Clock;
  rng: Rng;
  logger: Logger;
  metrics?: TierMetrics;
  config: { prefix: string; clusterId: string; segmentUploadTimeoutMs: number };
  /** What an upload needs, read at each start (the benchmark's switch may change). */
  uploadDeps: () => UploadDeps;
  partition: (key: string) => TieredPartition | undefined;
  /** An upload of the partition's current generation computed this `.log` checksum. */
  uploaded: (key: string, startOffset: number, logCrc32: number) => void;
  /** Hears how each upload ended; synchronously when its segment is already gone. */
  report: (report: UploadReport) => void;
}

/** Runs the uploads the upload core starts: the segment uploader's I/O, its metrics and its logs. */
export class UploadRuns {
  readonly #deps: UploadRunsDeps;

  constructor(deps: UploadRunsDeps) {
    this.#deps = deps;
  }

  /** Starts an upload, or reports at once that its segment is gone. */
  start(effect: StartUpload): void {
    this.#deps.metrics?.uploadsStarted.inc();
    const p = this.#deps.partition(effect.partition);
    const segment = p?.partition.log.segments.find((s) => s.startOffset === effect.segment.startOffset);
    if (p === undefined || segment === undefined || segment.location === "remote") {
      this.#deps.report({
        kind: "segment_deleted",
        partition: effect.partition,
        startOffset: effect.segment.startOffset,
      });
      return;
    }
    void this.#upload(effect, p, segment);
  }

  async #upload(effect: StartUpload, p: TieredPartition, segment: Segment): Promise<void> {
    const { prefix, clusterId, segmentUploadTimeoutMs } = this.#deps.config;
    const keys = segmentKeys(
      incarnationOf(prefix, clusterId, p.partition, effect.generation),
      segment.startOffset,
      null,
    );
    const startedMs = this.#deps.clock.nowMs();
    try {
      // The same deps as the verify pass's re-uploads, so that the piece gate and the benchmark's
      // switch reach every upload (docs/TUNING.md, "The piece gate").
      const outcome = await uploadSegment(
        this.#deps.uploadDeps(),
        sealedSegmentOf(segment),
        keys,
        this.#deps.clock.nowMs() + segmentUploadTimeoutMs,
      );
      this.#ended(effect, segment, outcome, startedMs);
    } catch (error) {
      this.#threw(effect, segment, error);
    }
  }

  /** An upload came back with an outcome: account it, and report it. */
  #ended(effect: StartUpload, segment: Segment, outcome: UploadOutcome, startedMs: number): void {
    const metrics = this.#deps.metrics;
    if (outcome.kind === "uploaded") {
      metrics?.uploadsCompleted.inc();
      metrics?.uploadedBytes.inc(outcome.sizeBytes + outcome.indexSizeBytes + outcome.sidecarSizeBytes);
      metrics?.uploadDuration.observe((this.#deps.clock.nowMs() - startedMs) / 1000);
    }
    // An upload of a generation a purge has since ended must not lend its checksum to the new
    // generation's segment at the same offset: eviction would write it into the new marker.
    const current = this.#deps.partition(effect.partition)?.partition.superblock.purgeGeneration;
    if (outcome.kind === "uploaded" && current === effect.generation) {
      this.#deps.uploaded(effect.partition, segment.startOffset, outcome.logCrc32);
    }
    const event = { partition: effect.partition, identity: effect.identity };
    this.#deps.report(
      outcome.kind === "uploaded" ? { kind: "uploaded", ...event } : {
        kind: "failed",
        ...event,
        errorClass: "fail",
        anomaly: outcome.detail,
        random: this.#deps.rng.nextFloat(),
      },
    );
  }

  /**
   * An upload threw: its segment is gone (retention took it), or it failed and is retried. A bug is
   * neither: it leaves the upload and stops the process, never retried.
   */
  #threw(effect: StartUpload, segment: Segment, error: unknown): void {
    rethrowBug(error, this.#deps.logger, "an upload threw; the process stops", {
      partition: effect.partition,
      start_offset: segment.startOffset,
    });
    if (error instanceof DiskError && error.code === "not_found") {
      this.#deps.report({
        kind: "segment_deleted",
        partition: effect.partition,
        startOffset: segment.startOffset,
      });
      return;
    }
    this.#deps.metrics?.uploadsFailed.inc({
      profile: classify(error) === "retry" ? "transient" : "non_transient",
    });
    this.#deps.logger.warn("upload failed; it will be retried", {
      partition: effect.partition,
      start_offset: segment.startOffset,
      error,
    });
    this.#deps.report({
      kind: "failed",
      partition: effect.partition,
      identity: effect.identity,
      errorClass: classify(error),
      random: this.#deps.rng.nextFloat(),
    });
  }
}
