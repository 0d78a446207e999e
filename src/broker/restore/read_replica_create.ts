import type { PartitionSeed } from "../../log/partition/seeded_partition.ts";
import { FormatVersionError } from "../../runtime/format_version_error.ts";
import { clusterRoot, sourcePrefix } from "../../tier/bucket/object_keys.ts";
import { RestoreError } from "../../tier/restore/restore_plan.ts";
import { findTopicManifest, readPartitionPlan, restoreSeedOf } from "../../tier/restore/restore_reader.ts";
import { TopicManifestError } from "../../tier/bucket/topic_manifest.ts";
import { StateTransferError } from "../../tier/restore/transfer_chain.ts";
import { AlreadyExistsError, ReadReplicaRefusedError } from "../broker_errors.ts";
import { type BucketRestoreDeps, restoredOptions } from "./bucket_restore.ts";
import type { TopicDescription } from "../catalog/catalog.ts";
import type { ReadReplicaSource, TopicOptions } from "../catalog/topic_options.ts";

/**
 * Creates a read-replica topic (docs/DESIGN.md, "Read replicas"): the source's topic manifest gives
 * its options, and each partition starts as a restore's would, from the markers of the source's
 * objects (the newest gapless chain the bucket holds) and an empty active segment after them; the
 * follower plants what the source uploads from then on. Refused in a cluster, for a source that was
 * itself restored, and for what the bucket does not describe.
 */
export interface ReadReplicaDeps extends BucketRestoreDeps {
  /** The store reads other buckets of its service (`BucketRouter`; s3, not fs). */
  readsOtherBuckets: boolean;
}

export async function createReadReplica(
  deps: ReadReplicaDeps,
  streamName: string,
  topicName: string,
  source: ReadReplicaSource,
): Promise<TopicDescription> {
  const label = `${streamName}/${topicName}`;
  if (deps.catalog.sharesMetadata) {
    throw new ReadReplicaRefusedError(
      `Cannot create read replica ${label}: read replicas in a cluster are not supported`,
    );
  }
  const bucket = source.bucket ?? null;
  if (bucket !== null && !deps.readsOtherBuckets) {
    throw new ReadReplicaRefusedError(
      `Cannot create read replica ${label}: the fs backend has no other bucket than its directory`,
    );
  }
  try {
    const prefix = sourcePrefix(deps.prefix, bucket);
    const root = clusterRoot(prefix, source.clusterId);
    const topic = await findTopicManifest(deps.store, root, source.stream, source.topic);
    if (topic.restoredFrom !== undefined) {
      throw new ReadReplicaRefusedError(
        `Cannot create read replica ${label}: its source ${source.stream}/${source.topic} was itself restored, and its oldest segments are another topic's objects`,
      );
    }
    const options = replicaOptions(restoredOptions(topic), source);
    if (deps.catalog.findTopic(streamName, topicName) !== null) {
      throw new AlreadyExistsError(`Cannot create topic ${label}: it already exists`);
    }
    const seeds: (PartitionSeed | null)[] = [];
    const incarnations = [];
    for (let p = 0; p < options.partitions; p++) {
      const plan = await readPartitionPlan(deps.store, prefix, topic, p);
      const seed = await restoreSeedOf(deps.store, topic, p, plan, deps.logger);
      seeds.push(
        seed === null || bucket === null
          ? seed
          : { ...seed, restoredFrom: { ...seed.restoredFrom!, bucket } },
      );
      if (plan.segments.length > 0) {
        const { createdRevision, purgeGeneration } = plan;
        incarnations.push({ partitionId: p, createdRevision, purgeGeneration });
      }
    }
    const from = {
      ...(bucket === null ? {} : { bucket }),
      clusterId: source.clusterId,
      streamId: topic.streamId,
      topicId: topic.topicId,
      incarnations,
    };
    return await deps.catalog.createTopic(streamName, topicName, options, { from, seeds });
  } catch (error) {
    const refusals = [RestoreError, FormatVersionError, TopicManifestError, StateTransferError];
    if (refusals.some((kind) => error instanceof kind)) {
      throw new ReadReplicaRefusedError(
        `Cannot create read replica ${label}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * A read replica's options: the source's partitions, segment size, timestamp type and message size;
 * tiered, with no retention of its own (the source's rules, followed through its manifests) and
 * nothing kept locally (it holds no data).
 */
function replicaOptions(source: TopicOptions, of: ReadReplicaSource): TopicOptions {
  return {
    ...source,
    tiered: true,
    segmentMaxAgeMs: null,
    retentionMaxAgeMs: null,
    retentionMaxBytes: null,
    localRetentionAgeMs: null,
    localRetentionSizeBytes: null,
    retentionConsumerBarrier: false,
    replicationFactor: null,
    readReplicaOf: { ...of },
  };
}
