import type { ObjectStore } from "../../objectstore/object_store.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";
import { clusterRoot } from "./object_keys.ts";

/** Keys one boot check lists at most to find a segment object. */
export const bucketFormatListKeysMax = 1000;

/**
 * Refuses, at boot, a bucket whose objects of this cluster are in another format version: one
 * LIST of the cluster's prefix (at most `bucketFormatListKeysMax` keys) and one HEAD of the first
 * `.log` object found, whose `format-version` must be this server's. A cluster with no object yet
 * passes.
 */
export async function checkBucketFormat(
  store: ObjectStore,
  prefix: string,
  clusterId: string,
): Promise<void> {
  const root = clusterRoot(prefix, clusterId);
  const page = await store.list(root, { maxKeys: bucketFormatListKeysMax });
  const sample = page.objects.find((o) => o.key.endsWith(".log"));
  if (sample === undefined) return;
  const head = await store.head(sample.key);
  // Deleted between the LIST and the HEAD: housekeeping's work, no format to judge.
  if (head === null) return;
  const found = head.metadata["format-version"];
  if (found !== String(storageFormatVersion)) {
    throw new FormatVersionError(
      `the bucket's objects under ${root} (${sample.key})`,
      found,
      storageFormatVersion,
    );
  }
}
