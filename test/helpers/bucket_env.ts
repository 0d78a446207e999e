/**
 * The environment of a server that tiers to the fs bucket `bucket` as cluster `clusterId`, with
 * housekeeping quick to write its manifests (idle after 1 s, manifests every second), so that a
 * restore from the bucket finds them soon.
 */
export function bucketEnv(bucket: string, clusterId: string): Record<string, string> {
  return {
    STRATA_TIERED_STORAGE_FS_PATH: bucket,
    STRATA_SYSTEM_CLUSTER_ID: clusterId,
    STRATA_TIERED_STORAGE_HOUSEKEEPING_IDLE_TIMEOUT: "1 s",
    STRATA_TIERED_STORAGE_HOUSEKEEPING_MANIFEST_UPLOAD_INTERVAL: "1 s",
  };
}
