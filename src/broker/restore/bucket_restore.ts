import type { Logger } from "../../runtime/logger.ts";
import type { PartitionSeed } from "../../log/partition/seeded_partition.ts";
import { clusterRoot } from "../../tier/bucket/object_keys.ts";
import { type PartitionRestorePlan, RestoreError } from "../../tier/restore/restore_plan.ts";
import {
  findTopicManifest,
  listClusters,
  readPartitionPlan,
  restoreSeedOf,
  type RestoreStore,
} from "../../tier/restore/restore_reader.ts";
import { type TopicManifest, TopicManifestError } from "../../tier/bucket/topic_manifest.ts";
import { StateTransferError } from "../../tier/restore/transfer_chain.ts";
import { FormatVersionError } from "../../runtime/format_version_error.ts";
import { AlreadyExistsError, InvalidTopicOptionError, RestoreRefusedError } from "../broker_errors.ts";
import type { Catalog } from "../catalog/catalog.ts";
import {
  checkTopicOption,
  type RangedTopicOption,
  timestampTypes,
  topicOptionRanges,
  type TopicOptions,
  withOptionDefaults,
} from "../catalog/topic_options.ts";

/** What to restore (docs/DESIGN.md, "Restore"; `deno task restore`, `POST /admin/restore`). */
export interface RestoreRequest {
  stream: string;
  topic: string;
  /** Only this partition's data; the topic's other partitions are created empty. */
  partition?: number;
  /** The name the topic takes here; the source's by default. */
  as?: string;
  /** The source cluster in the bucket; without it, the only one there. */
  clusterId?: string;
  /** Reports what the restore would do and changes nothing. */
  dryRun: boolean;
}

export interface RestoreReport {
  dry_run: boolean;
  source: { cluster_id: string; stream: string; topic: string; stream_id: number; topic_id: number };
  target: { stream: string; topic: string };
  partitions: PartitionReport[];
}

interface PartitionReport {
  partition: number;
  incarnation: string | null;
  segments: number;
  bytes: number;
  first_offset: number | null;
  next_offset: number;
  sources: { from_offset: number; to_offset: number; source: string }[];
  left_out: { start_offset: number; end_offset: number; reason: string }[];
}

export interface BucketRestoreDeps {
  catalog: Catalog;
  store: RestoreStore;
  /** `[tiered_storage] prefix`: the bucket prefix the clusters are under. */
  prefix: string;
  logger: Logger;
}

/**
 * A shallow restore of a topic, or one partition's data, from the bucket: reads the topic manifest
 * and each partition's plan, refuses what it cannot take whole, and creates the topic from seeds
 * (markers of objects that stay where they are, and an empty active segment at the next offset).
 * Never deletes anything. A dry run reports the plan and changes nothing.
 */
export async function restoreFromBucket(
  deps: BucketRestoreDeps,
  request: RestoreRequest,
): Promise<RestoreReport> {
  try {
    const clusterId = request.clusterId ?? await onlyCluster(deps);
    const topic = await findTopicManifest(
      deps.store,
      clusterRoot(deps.prefix, clusterId),
      request.stream,
      request.topic,
    );
    const target = { stream: request.stream, topic: request.as ?? request.topic };
    if (topic.restoredFrom !== undefined) {
      const from = topic.restoredFrom;
      throw new RestoreRefusedError(
        `Cannot restore ${request.stream}/${request.topic}: it was itself restored, and its oldest segments are objects of cluster ${from.clusterId}'s stream ${from.streamId} topic ${from.topicId}; restoring a restored topic is not supported`,
      );
    }
    const options = restoredOptions(topic);
    if (deps.catalog.findTopic(target.stream, target.topic) !== null) {
      throw new RestoreRefusedError(`Cannot restore ${target.stream}/${target.topic}: the topic exists`);
    }
    const partitionIds = partitionsOf(request, options);
    const plans = new Map<number, PartitionRestorePlan>();
    for (const p of partitionIds) {
      plans.set(p, checkedPlan(await readPartitionPlan(deps.store, deps.prefix, topic, p), p));
    }
    const report = reportOf(request, topic, target, plans);
    if (request.dryRun) return report;
    const seeds: (PartitionSeed | null)[] = [];
    for (let p = 0; p < options.partitions; p++) {
      const plan = plans.get(p);
      seeds.push(plan === undefined ? null : await restoreSeedOf(deps.store, topic, p, plan, deps.logger));
    }
    if (!deps.catalog.streams().some((s) => s.name === target.stream)) {
      await deps.catalog.createStream(target.stream);
    }
    // Every replica of a cluster seeds from the same chain: the source's, up to where the plan ends;
    // its leaders start above the epochs the chain's batches carry.
    const incarnations = [...plans].filter(([, plan]) => plan.segments.length > 0).map((
      [partitionId, plan],
    ) => ({
      partitionId,
      createdRevision: plan.createdRevision,
      purgeGeneration: plan.purgeGeneration,
      fromOffset: plan.segments[0]!.startOffset,
      belowOffset: plan.nextOffset,
      firstLeaderEpoch: (seeds[partitionId]?.epochs.at(-1)?.epoch ?? -1) + 1,
    }));
    const from = { clusterId, streamId: topic.streamId, topicId: topic.topicId, incarnations };
    await deps.catalog.createTopic(target.stream, target.topic, options, { from, seeds });
    return report;
  } catch (error) {
    // What the bucket holds rules the restore out: refused with the reason, never a server fault.
    const refusals = [
      RestoreError,
      AlreadyExistsError,
      FormatVersionError,
      TopicManifestError,
      StateTransferError,
    ];
    if (refusals.some((kind) => error instanceof kind)) {
      throw new RestoreRefusedError((error as Error).message, { cause: error });
    }
    throw error;
  }
}

async function onlyCluster(deps: BucketRestoreDeps): Promise<string> {
  const clusters = await listClusters(deps.store, deps.prefix);
  if (clusters.length === 1) return clusters[0]!;
  if (clusters.length === 0) {
    throw new RestoreRefusedError(`Cannot restore: the bucket holds no cluster under ${deps.prefix}/`);
  }
  throw new RestoreRefusedError(
    `Cannot restore: the bucket holds ${clusters.length} clusters (${clusters.join(", ")}); name one`,
  );
}

/** Refuses a plan that leaves out data newer than where it would continue: producing would fork the log. */
function checkedPlan(plan: PartitionRestorePlan, partition: number): PartitionRestorePlan {
  const newer = plan.leftOut.find((l) => l.startOffset >= plan.nextOffset);
  if (newer !== undefined) {
    throw new RestoreRefusedError(
      `Cannot restore partition ${partition}: offset ${newer.startOffset} lies past the chain the bucket holds whole (${newer.reason})`,
    );
  }
  return plan;
}

function partitionsOf(request: RestoreRequest, options: TopicOptions): number[] {
  if (request.partition === undefined) return Array.from({ length: options.partitions }, (_, i) => i);
  if (
    !Number.isInteger(request.partition) || request.partition < 0 || request.partition >= options.partitions
  ) {
    throw new RestoreRefusedError(
      `Cannot restore partition ${request.partition}: the topic has partitions 0 to ${
        options.partitions - 1
      }`,
    );
  }
  return [request.partition];
}

/**
 * The topic manifest's options, checked as a create request's are: every ranged option within its
 * range, the rest of their type. A restored topic is tiered: its data is in the bucket.
 */
export function restoredOptions(topic: TopicManifest): TopicOptions {
  const stored = withOptionDefaults(topic.options as unknown as TopicOptions);
  for (const option of Object.keys(topicOptionRanges) as RangedTopicOption[]) {
    const value = stored[option];
    const nullable = option !== "partitions" && option !== "segmentSizeBytes" && option !== "maxMessageBytes";
    if (value === null && nullable) continue;
    checkTopicOption(option, option, typeof value === "number" ? value : null);
  }
  if (stored.tiered !== true) {
    throw new InvalidTopicOptionError(
      `Cannot restore topic ${topic.topicName}: its manifest says it is not tiered`,
    );
  }
  if (
    typeof stored.retentionConsumerBarrier !== "boolean" || !timestampTypes.includes(stored.timestampType)
  ) {
    throw new InvalidTopicOptionError(
      `Cannot restore topic ${topic.topicName}: its manifest's options are not whole`,
    );
  }
  return stored;
}

function reportOf(
  request: RestoreRequest,
  topic: TopicManifest,
  target: { stream: string; topic: string },
  plans: ReadonlyMap<number, PartitionRestorePlan>,
): RestoreReport {
  return {
    dry_run: request.dryRun,
    source: {
      cluster_id: topic.clusterId,
      stream: topic.streamName,
      topic: topic.topicName,
      stream_id: topic.streamId,
      topic_id: topic.topicId,
    },
    target,
    partitions: [...plans].map(([partition, plan]) => ({
      partition,
      incarnation: plan.segments.length === 0 ? null : `${plan.createdRevision}-${plan.purgeGeneration}`,
      segments: plan.segments.length,
      bytes: plan.segments.reduce((n, s) => n + s.sizeBytes, 0),
      first_offset: plan.segments[0]?.startOffset ?? null,
      next_offset: plan.nextOffset,
      sources: plan.sources.map((s) => ({
        from_offset: s.fromOffset,
        to_offset: s.toOffset,
        source: s.source,
      })),
      left_out: plan.leftOut.map((l) => ({
        start_offset: l.startOffset,
        end_offset: l.endOffset,
        reason: l.reason,
      })),
    })),
  };
}
