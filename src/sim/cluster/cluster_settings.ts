import type { Config } from "../../config/config.ts";
import { loadConfig } from "../../config/load_config.ts";
import { defaultTopicOptions, type TopicOptions } from "../../broker/catalog/topic_options.ts";
import type { PartitionAddress } from "../../log/partition/partition.ts";

/** The simulated cluster's nodes, by id. */
export const nodeIds = [1, 2, 3] as const;
/** Virtual milliseconds of one step of the workload. */
export const clusterStepMs = 10;
/** `[cluster] lease_ttl`. */
export const leaseTtlMs = 2000;
/** `[tiered_storage.housekeeping] delete_grace`. */
export const deleteGraceMs = 1000;
/** `[tiered_storage.housekeeping] orphan_sweep_interval`. */
export const orphanSweepIntervalMs = 2000;
/** Each node's data directory and chunk cache, on its own simulated disk. */
export const dataPath = "/strata/data";
export const cachePath = "/strata/cache";
/** The bucket's key prefix. */
export const bucketPrefix = "strata";
/** The etcd key prefix. */
export const etcdPrefix = "/strata";
/** The simulated disk of each node, bytes. */
export const diskCapacityBytes = 1024 * 1024 * 1024;
/** The one topic the workload writes, with replication factor 3. */
export const streamName = "sim";
export const topicName = "t";
/** Produces in flight at once, at most; the workload waits for one to end before the next beyond it. */
export const producesInFlightMax = 8;

/**
 * A node's configuration, read by the same loader as a real node's file: small pieces, a short
 * lease, housekeeping every second with a one-second grace, so that a run of some thousand steps
 * sees uploads, evictions, leader changes and collections.
 */
export function nodeConfig(nodeId: number): Config {
  const text = [
    "[system]",
    `path = "${dataPath}"`,
    `fsync = "always"`,
    "fd_table_reserve = 0",
    "max_open_files = 256",
    "[kafka]",
    `address = "127.0.0.1:${9090 + nodeId}"`,
    "[http]",
    `address = "127.0.0.1:${8080 + nodeId}"`,
    "[cluster]",
    "enabled = true",
    `node_id = ${nodeId}`,
    `lease_ttl = "${leaseTtlMs} ms"`,
    "min_insync_replicas = 2",
    `replica_lag_max = "2000 ms"`,
    `secret = "simulated-cluster-secret"`,
    `etcd_prefix = "${etcdPrefix}"`,
    "[log]",
    `level = "error"`,
    "[tiered_storage]",
    "enabled = true",
    `backend = "fs"`,
    `segment_upload_timeout = "10000 ms"`,
    `upload_piece_size = "64 KiB"`,
    `upload_loop_backoff_max = "1000 ms"`,
    "fetch_concurrency = 1",
    `fetch_timeout = "2000 ms"`,
    `request_timeout = "10000 ms"`,
    "[tiered_storage.fs]",
    `path = "/bucket"`,
    "[tiered_storage.s3]",
    `prefix = "${bucketPrefix}"`,
    "[tiered_storage.cache]",
    `path = "${cachePath}"`,
    `size = "16 MiB"`,
    `chunk_size = "1 MiB"`,
    "readahead_max = 1",
    `trim_min_interval = "1000 ms"`,
    "[tiered_storage.housekeeping]",
    `interval = "1000 ms"`,
    `idle_timeout = "100 ms"`,
    "idle_threshold_rps = 1000000",
    `delete_grace = "${deleteGraceMs} ms"`,
    `orphan_sweep_interval = "${orphanSweepIntervalMs} ms"`,
    `manifest_upload_interval = "2000 ms"`,
    `verify_interval = "5000 ms"`,
    `merge_interval = "2000 ms"`,
  ].join("\n");
  return loadConfig(text, `simulated node ${nodeId}`, {}).config;
}

/**
 * The workload's topic: tiered, replicated three times, segments rolled after a second (or 16 KiB)
 * and local copies evicted a second after upload, so that small messages make many segments, which
 * the leaders merge.
 */
export function simTopicOptions(): TopicOptions {
  return {
    ...defaultTopicOptions({ tiered: true, localRetentionAgeMs: 1000, localRetentionSizeBytes: null }, 1),
    segmentMaxAgeMs: 1000,
    // Small enough that runs of the second-long segments close, and the leaders merge them.
    segmentSizeBytes: 16 * 1024,
    localRetentionAgeMs: 1000,
    replicationFactor: 3,
  };
}

/** The topic's one partition, once the metadata names its ids. */
export interface SimPartition {
  address: PartitionAddress;
  /** "{stream}/{topic}/{partition}" ids, as the floor's etcd key names it. */
  label: string;
}
