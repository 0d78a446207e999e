import type { Partition } from "../../log/partition/partition.ts";
import { plantedSegmentsMax } from "../../log/remote/remote_planting.ts";
import { NotModifiedError } from "../../objectstore/object_store_errors.ts";
import { assert, rethrowBug } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import { concurrently } from "../../runtime/cooperation/concurrently.ts";
import type { Logger } from "../../runtime/logger.ts";
import { readChainEpochs } from "../../tier/restore/chain_epochs.ts";
import { decodeManifest, type ManifestSegment, type PartitionManifest } from "../../tier/bucket/manifest.ts";
import { clusterRoot, segmentKeys, sourcePrefix } from "../../tier/bucket/object_keys.ts";
import {
  chooseManifest,
  type FollowedPartition,
  followManifest,
  type FollowStep,
  type ListedManifest,
  manifestsByPartition,
  type SourceIncarnation,
} from "../../tier/restore/read_replica_core.ts";
import { listAll, readSmall, type RestoreStore } from "../../tier/restore/restore_reader.ts";
import { markerOfObject, type TieredObject, tieredObjectOf } from "../../tier/restore/transfer_chain.ts";
import type { Catalog, CatalogTopic } from "../catalog/catalog.ts";
import type { TopicRestoredFrom } from "../metadata/metadata.ts";
import type { ReadReplicaMetrics } from "./read_replica_metrics.ts";

export interface ReadReplicaFollowerDeps {
  catalog: Catalog;
  store: RestoreStore;
  clock: Clock;
  logger: Logger;
  /** `[tiered_storage] prefix`: the bucket prefix the clusters are under. */
  prefix: string;
  /** `[tiered_storage] read_replica_poll_interval`: from the end of one poll to the start of the next. */
  pollIntervalMs: number;
  metrics?: ReadReplicaMetrics;
}

/** What one poll did, over every read-replica topic. */
export interface PollReport {
  topics: number;
  manifestsRead: number;
  notModified: number;
  segmentsPlanted: number;
  segmentsRetired: number;
  /** Planted segments a source's merge replaced. */
  segmentsReplaced: number;
  failures: number;
}

/** The source partition a read replica's partition follows: its cluster, ids and bucket (absent: the server's own). */
type ReadReplicaSource = {
  bucket?: string;
  clusterId: string;
  streamId: number;
  topicId: number;
  partitionId: number;
};

/** HEADs in flight at once for manifest entries that lack a marker's fields. */
const headsInFlightMax = 8;
/** Largest partition manifest read: 65,536 segments of about 100 bytes each, with room. */
const manifestBytesMax = 16 * 1024 * 1024;

/**
 * Keeps read-replica topics up with their sources (docs/DESIGN.md, "Read replicas"): every
 * `read_replica_poll_interval`, one listing of each source topic's `meta/` prefix, a conditional GET
 * (`If-None-Match`) of each partition manifest whose ETag changed, markers planted for the new
 * segments (fields from the manifest, or a HEAD where it lacks them), and the segments the source's
 * retention deleted retired. Never deletes or writes an object. Driven from shard 0's tick.
 */
export class ReadReplicaFollower {
  readonly #deps: ReadReplicaFollowerDeps;
  /** Per partition label: the key and ETag of the manifest last read whole. */
  readonly #read = new Map<string, { key: string; etag: string | null }>();
  /** Partitions whose source incarnation ended, reported once each. */
  readonly #ended = new Set<string>();
  #nextPollMs = 0;
  #running: Promise<PollReport | null> | null = null;
  /** The last poll started: the next one waits for it. */
  #polls: Promise<unknown> = Promise.resolve();
  #stopped = false;

  constructor(deps: ReadReplicaFollowerDeps) {
    assert(deps.pollIntervalMs > 0, "Cannot follow read replicas: the poll interval must be positive");
    this.#deps = deps;
  }

  /** Starts a poll when one is due and none runs. */
  onTick(nowMs: number): void {
    if (this.#stopped || this.#running !== null || nowMs < this.#nextPollMs) return;
    const poll = this.pollOnce().catch((error) => {
      rethrowBug(error, this.#deps.logger, "a read replica poll threw; the process stops");
      // A topic's or partition's failure is counted inside; this one is outside them.
      this.#deps.logger.error("read replica poll failed", { error });
      return null;
    });
    this.#running = poll.finally(() => {
      this.#running = null;
      this.#nextPollMs = this.#deps.clock.nowMs() + this.#deps.pollIntervalMs;
    });
  }

  /** Waits for a poll in flight; none starts after this. */
  async stop(): Promise<void> {
    this.#stopped = true;
    // A poll's failure was logged where it happened (`onTick`); stopping only waits for it to end.
    await this.#running?.catch(() => {});
  }

  /**
   * One poll of every read-replica topic, after the one in flight if any (two never run at once);
   * a topic's failure is logged and counted, never thrown.
   */
  pollOnce(): Promise<PollReport> {
    // The chain goes on after a failed poll: that poll's caller heard of its failure.
    const poll = this.#polls.catch(() => {}).then(() => this.#poll());
    this.#polls = poll;
    return poll;
  }

  async #poll(): Promise<PollReport> {
    const report: PollReport = {
      topics: 0,
      manifestsRead: 0,
      notModified: 0,
      segmentsPlanted: 0,
      segmentsRetired: 0,
      segmentsReplaced: 0,
      failures: 0,
    };
    const live = new Set<string>();
    for (const stream of this.#deps.catalog.streams()) {
      for (const meta of stream.topics) {
        if (meta.options.readReplicaOf === null || meta.restoredFrom === undefined) continue;
        const topic = this.#deps.catalog.findTopic(stream.name, meta.name);
        if (topic === null) continue;
        report.topics++;
        await this.#pollTopic(topic, meta.restoredFrom, report, live);
      }
    }
    // Both maps hold only partitions of live read replicas: bounded by the partitions hosted.
    for (const label of this.#read.keys()) if (!live.has(label)) this.#read.delete(label);
    for (const label of this.#ended) if (!live.has(label)) this.#ended.delete(label);
    this.#deps.metrics?.record(report);
    return report;
  }

  async #pollTopic(
    topic: CatalogTopic,
    from: TopicRestoredFrom,
    report: PollReport,
    live: Set<string>,
  ): Promise<void> {
    const prefix = sourcePrefix(this.#deps.prefix, from.bucket ?? null);
    const root = clusterRoot(prefix, from.clusterId);
    let listed: Map<number, ListedManifest[]>;
    try {
      listed = manifestsByPartition(
        root,
        await listAll(this.#deps.store, `${root}meta/${from.streamId}/${from.topicId}/`),
      );
    } catch (error) {
      rethrowBug(error, this.#deps.logger, "listing a read replica's source threw; the process stops");
      report.failures++;
      this.#deps.logger.warn("Cannot list a read replica's source", { topic: topic.meta.name, error });
      return;
    }
    for (const [partitionId, slot] of topic.slots.entries()) {
      if (slot.kind !== "open") continue;
      live.add(slot.partition.log.label);
      const source = {
        ...(from.bucket === undefined ? {} : { bucket: from.bucket }),
        clusterId: from.clusterId,
        streamId: from.streamId,
        topicId: from.topicId,
        partitionId,
      };
      try {
        await this.#pollPartition(slot.partition, listed.get(partitionId) ?? [], source, prefix, report);
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "following a read replica's source threw; the process stops", {
          partition: slot.partition.log.label,
        });
        report.failures++;
        this.#deps.logger.warn("Cannot follow a read replica's source partition", {
          partition: slot.partition.log.label,
          error,
        });
      }
    }
  }

  async #pollPartition(
    partition: Partition,
    listed: readonly ListedManifest[],
    source: ReadReplicaSource,
    prefix: string,
    report: PollReport,
  ): Promise<void> {
    const label = partition.log.label;
    const sb = partition.superblock;
    const last = this.#read.get(label);
    const view: FollowedPartition = {
      incarnation: sb.restoredFrom === null
        ? null
        : { createdRevision: sb.createdRevision, purgeGeneration: sb.purgeGeneration },
      firstOffset: partition.log.firstOffset,
      nextOffset: partition.log.nextOffset,
      etag: last?.etag ?? null,
    };
    const choice = chooseManifest(view, listed);
    if (choice.kind === "ended") {
      if (!this.#ended.has(label)) {
        this.#deps.logger.warn("read replica stops following", { partition: label, reason: choice.reason });
      }
      this.#ended.add(label);
      return;
    }
    if (choice.kind === "unchanged") return;
    const listedManifest = choice.manifest;
    const manifest = await this.#readManifest(
      listedManifest,
      last?.key === listedManifest.key ? last.etag : null,
    );
    if (manifest === null) {
      report.notModified++;
      return;
    }
    report.manifestsRead++;
    const inc = {
      createdRevision: listedManifest.createdRevision,
      purgeGeneration: listedManifest.purgeGeneration,
    };
    checkManifest(manifest, source, inc);
    const step = followManifest(view, manifest, plantedSegmentsMax);
    const { bucket: _bucket, ...address } = source;
    await this.#follow(partition, step, { source, object: { prefix, ...address, ...inc } }, report);
    // A manifest whose new segments did not all fit one planting is read again at the next poll.
    const whole = step.plant.length < plantedSegmentsMax;
    this.#read.set(label, { key: listedManifest.key, etag: whole ? listedManifest.etag : null });
  }

  /**
   * Takes one manifest's step: plants its new segments (a merge across the end first, if it starts
   * where a planted segment does), takes its merges of planted segments, and retires what the
   * source's retention deleted.
   */
  async #follow(
    partition: Partition,
    step: FollowStep,
    to: { source: ReadReplicaSource; object: Parameters<typeof segmentKeys>[0] },
    report: PollReport,
  ): Promise<void> {
    const label = partition.log.label;
    const inc = { createdRevision: to.object.createdRevision, purgeGeneration: to.object.purgeGeneration };
    const first = step.plant[0];
    if (
      first !== undefined && first.startOffset < partition.log.nextOffset &&
      !partition.log.segments.some((s) => s.startOffset === first.startOffset)
    ) {
      // A merge's boundaries are the source's segments', which the replica planted: not so here.
      this.#deps.logger.warn(
        "read replica's source merged segments at an offset no planted segment starts at",
        {
          partition: label,
          offset: first.startOffset,
        },
      );
      step.plant.length = 0;
    }
    if (step.plant.length > 0) {
      const objects = await this.#objectsOf(step.plant, to.object);
      const epochs = await readChainEpochs(this.#deps.store, objects);
      await partition.plantRemote(objects.map((o) => markerOfObject(o, inc)), epochs, {
        ...to.source,
        ...inc,
      });
      report.segmentsPlanted += objects.length;
    }
    report.segmentsReplaced += await this.#replaceMerged(partition, step.replace, to.object);
    if (step.retireBelow !== null) {
      const before = partition.log.segments.length;
      await partition.applyDeletedUpTo({
        kind: "advance_deleted_up_to",
        partition: label,
        purgeGeneration: partition.superblock.purgeGeneration,
        upToOffset: step.retireBelow,
      });
      report.segmentsRetired += before - partition.log.segments.length;
    }
    if (step.gapAt !== null) {
      this.#deps.logger.warn("read replica's source manifest does not continue the partition", {
        partition: label,
        offset: step.gapAt,
      });
    }
  }

  /** The manifest, or null when it still has `etag` (a conditional GET). */
  async #readManifest(listed: ListedManifest, etag: string | null): Promise<PartitionManifest | null> {
    try {
      const options = etag === null ? {} : { ifNoneMatch: etag };
      // The source puts its manifest again as it changes: a read torn by that is made again.
      return await readSmall(this.#deps.store, listed, manifestBytesMax, decodeManifest, options);
    } catch (error) {
      if (error instanceof NotModifiedError) return null;
      throw error;
    }
  }

  /**
   * Replaces the planted segments that each of the source's merges covers, at most a planting's
   * worth a poll, unless the chain holds the merge already; returns how many segments went.
   */
  async #replaceMerged(
    partition: Partition,
    merges: readonly ManifestSegment[],
    inc: Parameters<typeof segmentKeys>[0],
  ): Promise<number> {
    const held = new Set(partition.log.segments.map((s) => `${s.startOffset}-${s.mergedEndOffset}`));
    const news = merges.filter((m) => !held.has(`${m.startOffset}-${m.endOffset}`)).slice(
      0,
      plantedSegmentsMax,
    );
    if (news.length === 0) return 0;
    const identity = { createdRevision: inc.createdRevision, purgeGeneration: inc.purgeGeneration };
    let replaced = 0;
    for (const object of await this.#objectsOf(news, inc)) {
      const decision = await partition.replaceRemote({
        kind: "replace_remote_segments",
        partition: partition.log.label,
        purgeGeneration: inc.purgeGeneration,
        markers: [markerOfObject(object, identity)],
      });
      if (decision.kind === "replace") replaced += decision.count;
      if (decision.kind === "rejected" || decision.kind === "wait") {
        this.#deps.logger.warn("read replica cannot take its source's merge", {
          partition: partition.log.label,
          start_offset: object.startOffset,
          reason: decision.reason,
        });
      }
    }
    return replaced;
  }

  /** The planted segments' objects: fields from the manifest, or from a HEAD where it lacks them. */
  async #objectsOf(
    segments: readonly ManifestSegment[],
    inc: Parameters<typeof segmentKeys>[0],
  ): Promise<TieredObject[]> {
    const objects: TieredObject[] = new Array(segments.length);
    await concurrently(segments.length, headsInFlightMax, async (i) => {
      const s = segments[i]!;
      const stem = { startOffset: s.startOffset, mergedEndOffset: s.merged === true ? s.endOffset : null };
      const key = segmentKeys(inc, stem.startOffset, stem.mergedEndOffset).log;
      const { logCrc32, indexSizeBytes, startTimestampUs, endTimestampUs } = s;
      objects[i] = logCrc32 === null || indexSizeBytes === null || startTimestampUs === null ||
          endTimestampUs === null
        ? tieredObjectOf(key, stem, await this.#deps.store.head(key))
        : {
          key,
          startOffset: s.startOffset,
          endOffset: s.endOffset,
          sizeBytes: s.sizeBytes,
          indexSizeBytes,
          startTimestampUs,
          endTimestampUs,
          maxTimestampUs: s.maxTimestampUs,
          logCrc32,
          merged: stem.mergedEndOffset !== null,
        };
    });
    return objects;
  }
}

/** A manifest read under a partition's key must describe that partition's incarnation. */
function checkManifest(
  m: PartitionManifest,
  source: { streamId: number; topicId: number; partitionId: number },
  inc: SourceIncarnation,
): void {
  const same = m.streamId === source.streamId && m.topicId === source.topicId &&
    m.partitionId === source.partitionId && m.createdRevision === inc.createdRevision &&
    m.purgeGeneration === inc.purgeGeneration;
  if (!same) {
    throw new Error(
      `Cannot follow partition ${source.partitionId}: its manifest describes ${m.streamId}/${m.topicId}/${m.partitionId}@${m.createdRevision}-${m.purgeGeneration}`,
    );
  }
}
