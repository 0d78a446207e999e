import { storageFormatVersion } from "../runtime/format_version_error.ts";
import type { Partition } from "../log/partition.ts";
import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { encodeManifest, manifestOf } from "./manifest.ts";
import { manifestKey, type PartitionIncarnation } from "./object_keys.ts";

/** What uploading a manifest needs. */
export interface ManifestUploadDeps {
  store: DeadlineObjectStore;
  metrics?: HousekeepingMetrics;
}

/**
 * Uploads the partition's manifest as it is now, over the one before, and reports which floor and
 * watermark it describes (the core uploads again only when they moved).
 */
export async function uploadManifest(
  deps: ManifestUploadDeps,
  partitionKey: string,
  partition: Partition,
  inc: PartitionIncarnation,
  budget: RequestBudget,
): Promise<JobOutcome> {
  const manifest = manifestOf(partition);
  const bytes = encodeManifest(manifest);
  budget.take();
  await deps.store.put(manifestKey(inc), async function* () {
    yield bytes;
  }, {
    sizeBytes: bytes.length,
    metadata: { "format-version": String(storageFormatVersion) },
    ifAbsent: false,
  });
  deps.metrics?.manifestsUploaded.inc();
  return {
    kind: "upload_manifest",
    partition: partitionKey,
    describes: `${manifest.tieredUpToOffset}:${manifest.deletedUpToOffset}`,
  };
}
