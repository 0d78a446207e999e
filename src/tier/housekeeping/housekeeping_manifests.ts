import { storageFormatVersion } from "../../runtime/format_version_error.ts";
import type { Partition } from "../../log/partition/partition.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import { type JobOutcome, manifestDescribes } from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { encodeManifest, manifestOf } from "../bucket/manifest.ts";
import { manifestKey, type PartitionIncarnation, topicManifestKey } from "../bucket/object_keys.ts";
import { encodeTopicManifest, type TopicFacts, type TopicManifest } from "../bucket/topic_manifest.ts";

/** What uploading a manifest needs. */
export interface ManifestUploadDeps {
  store: DeadlineObjectStore;
  metrics?: HousekeepingMetrics;
}

/** Partition 0's topic facts, and the version of them the core knows, for the topic manifest. */
export interface ManifestTopic {
  facts: TopicFacts;
  version: number;
}

/**
 * Uploads the partition's manifest as it is now, over the one before, and with `topic` (partition
 * 0's) the topic manifest beside it; reports what it describes (`manifestDescribes`: the core
 * uploads again only when the floor, the watermark or the topic moved).
 */
export async function uploadManifest(
  deps: ManifestUploadDeps,
  partitionKey: string,
  partition: Partition,
  inc: PartitionIncarnation,
  budget: RequestBudget,
  topic: ManifestTopic | null = null,
): Promise<JobOutcome> {
  const manifest = manifestOf(partition);
  // Without room for both requests, the partition's goes alone and the topic's waits for a run with room.
  const withTopic = topic !== null && budget.left >= 2 ? topic : null;
  budget.take();
  await putSmall(deps, manifestKey(inc), encodeManifest(manifest));
  deps.metrics?.manifestsUploaded.inc();
  if (withTopic !== null) {
    const key = topicManifestKey(inc.prefix, inc.clusterId, inc.streamId, inc.topicId);
    budget.take();
    await putSmall(deps, key, encodeTopicManifest(topicManifestOf(inc, withTopic.facts)));
  }
  const describes = manifestDescribes({
    floor: manifest.tieredUpToOffset,
    deletedUpToOffset: manifest.deletedUpToOffset,
    topicVersion: withTopic?.version ?? 0,
  });
  return { kind: "upload_manifest", partition: partitionKey, describes };
}

function topicManifestOf(inc: PartitionIncarnation, facts: TopicFacts): TopicManifest {
  return {
    version: storageFormatVersion,
    clusterId: inc.clusterId,
    streamId: inc.streamId,
    streamName: facts.streamName,
    topicId: inc.topicId,
    topicName: facts.topicName,
    createdAtMs: facts.createdAtMs,
    options: facts.options,
    ...(facts.restoredFrom === undefined ? {} : { restoredFrom: facts.restoredFrom }),
  };
}

/** One small object, written over any before it. */
async function putSmall(deps: ManifestUploadDeps, key: string, bytes: Uint8Array): Promise<void> {
  await deps.store.put(key, async function* () {
    yield bytes;
  }, {
    sizeBytes: bytes.length,
    metadata: { "format-version": String(storageFormatVersion) },
    ifAbsent: false,
  });
}
