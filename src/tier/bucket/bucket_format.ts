import type { ObjectStore } from "../../objectstore/object_store.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";
import { clusterRoot } from "./object_keys.ts";

/** Keys one boot check lists at most to find a segment object. */
export const bucketFormatListKeysMax = 1000;
/**
 * Keys a page of the check asks for: a partition's first keys are its first segment's `.index` and
 * `.log`, so a small page finds one, and an `fs` store, which reads each listed object's header,
 * reads no more than that.
 */
export const bucketFormatPageKeys = 16;

/**
 * Refuses, at boot, a bucket whose objects of this cluster are in another format version: LISTs of
 * the cluster's prefix, `bucketFormatPageKeys` keys a page and `bucketFormatListKeysMax` in all at
 * most, until a `.log` object, and one HEAD of it, whose `format-version` must be this server's. A
 * cluster with no object yet passes.
 */
export async function checkBucketFormat(
  store: ObjectStore,
  prefix: string,
  clusterId: string,
): Promise<void> {
  const root = clusterRoot(prefix, clusterId);
  let sample: string | undefined;
  let startAfter: string | null = null;
  for (
    let listed = 0;
    sample === undefined && listed < bucketFormatListKeysMax;
    listed += bucketFormatPageKeys
  ) {
    const page = await store.list(root, {
      maxKeys: bucketFormatPageKeys,
      ...(startAfter === null ? {} : { startAfter }),
    });
    sample = page.objects.find((o) => o.key.endsWith(".log"))?.key;
    startAfter = page.nextStartAfter;
    if (startAfter === null) break;
  }
  if (sample === undefined) return;
  const head = await store.head(sample);
  // Deleted between the LIST and the HEAD: housekeeping's work, no format to judge.
  if (head === null) return;
  const found = head.metadata["format-version"];
  if (found !== String(storageFormatVersion)) {
    throw new FormatVersionError(
      `the bucket's objects under ${root} (${sample})`,
      found,
      storageFormatVersion,
    );
  }
}
