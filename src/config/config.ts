import type { LogLevel } from "../runtime/logger.ts";
import type { Address, ValidatedConfig } from "./key_spec.ts";
import { parseAddress } from "./validate_config.ts";
import { ConfigError } from "./config_error.ts";

/**
 * `[system] fsync`: "always" acknowledges a produce after its fsync (group commit), "interval" after
 * its write. The partition log has a policy of the same values; the broker hands this one to it.
 */
export type FsyncSetting = "always" | "interval";
/** `[system] crc32c`: the native engine, WebAssembly, or the native one when it loads. */
export type Crc32cSetting = "auto" | "native" | "wasm";

/** The typed configuration the server runs on: names carry their units. */
export interface Config {
  system: {
    path: string;
    tickIntervalMs: number;
    shards: number;
    clusterId: string;
    fsync: FsyncSetting;
    fsyncIntervalMs: number;
    indexIntervalBytes: number;
    writeQueueMax: number;
    /** `producer_id_expiration`: an idle idempotent producer's state is kept this long. */
    producerIdExpirationMs: number;
    externalMemoryReserveBytes: number;
    /** Nice value for the event loop's thread; 0 leaves it (docs/CONFIG.md, "Threads and descriptors"). */
    loopThreadNice: number;
    /** Descriptors held once at start-up to grow the kernel's descriptor table (0: off). */
    fdTableReserve: number;
    /** `max_open_files`: files held open between uses (active segments' files) at most. */
    maxOpenFiles: number;
    /** `crc32c`: which CRC32C engine the server uses (docs/CONFIG.md, "Checksums"). */
    crc32c: Crc32cSetting;
    /** `crc32c_library`: the shared library the native engine opens. */
    crc32cLibrary: string;
  };
  http: {
    address: Address;
    maxRequestBytes: number;
    tokens: readonly string[];
    /** `advertised_address`; null (the key empty): the address listened on. */
    advertisedAddress: Address | null;
  };
  kafka: KafkaConfig;
  groups: GroupsConfig;
  transactions: TransactionsConfig;
  cluster: ClusterConfig;
  log: {
    level: LogLevel;
  };
  tieredStorage: TieredStorageConfig;
}

/** `[groups]`: consumer groups and their committed offsets (docs/KAFKA.md, "Consumer groups"). */
export interface GroupsConfig {
  offsetsTopicPartitions: number;
  /** `group_max_size`: members and pending member ids of one group. */
  groupMembersMax: number;
  groupsMax: number;
  offsetsPerGroupMax: number;
  sessionTimeoutMinMs: number;
  sessionTimeoutMaxMs: number;
  initialRebalanceDelayMs: number;
  offsetMetadataBytesMax: number;
  offsetsCheckpointBytes: number;
}

/** `[cluster]`: this node's part in a cluster coordinated by etcd (docs/CLUSTER.md). */
export interface ClusterConfig {
  enabled: boolean;
  nodeId: number;
  etcdEndpoints: readonly string[];
  etcdPrefix: string;
  etcdRequestTimeoutMs: number;
  leaseTtlMs: number;
  replicationFactor: number;
  minInsyncReplicas: number;
  replicaLagMaxMs: number;
  secret: string;
}

/** `[kafka]`: the Kafka listener (docs/KAFKA.md). */
export interface KafkaConfig {
  enabled: boolean;
  address: Address;
  /** `advertised_address`; null (the key empty): the address listened on. */
  advertisedAddress: Address | null;
  maxFrameBytes: number;
  /** `max_connections`: connections served at once at most. */
  connectionsMax: number;
  /** `max_in_flight_requests`: requests of one connection read and not yet answered, at most. */
  requestsInFlightPerConnectionMax: number;
  /** `connection_idle_timeout`: a connection idle this long is closed. */
  connectionIdleTimeoutMs: number;
  autoCreateTopics: boolean;
  defaultPartitions: number;
  stream: string;
  /** `users`: SASL/PLAIN passwords by user name; empty: no authentication. */
  users: ReadonlyMap<string, string>;
  allowUnauthenticated: boolean;
  /** `transaction_max_timeout`: the longest `transaction.timeout.ms` a producer may ask. */
  transactionMaxTimeoutMs: number;
  /** `transactional_id_expiration`: an idle transactional id is forgotten after it. */
  transactionalIdExpirationMs: number;
}

/** `[transactions]`: the transaction coordinator (docs/KAFKA.md, "Transactions"). */
export interface TransactionsConfig {
  stateTopicPartitions: number;
  transactionalIdsMax: number;
  openTransactionsMax: number;
  partitionsPerTransactionMax: number;
  stateCheckpointBytes: number;
}

export interface TieredStorageConfig {
  enabled: boolean;
  backend: "fs" | "s3";
  segmentUploadTimeoutMs: number;
  /** `read_replica_poll_interval`: from the end of a read replica's poll to the start of the next. */
  readReplicaPollIntervalMs: number;
  uploadStallAfterMs: number;
  fetchTimeoutMs: number;
  requestTimeoutMs: number;
  connectionIdleTimeoutMs: number;
  uploadConcurrency: number;
  fetchConcurrency: number;
  fetchBandwidthBytesPerSec: number | "unlimited";
  uploadPieceBytes: number;
  uploadLoopBackoffMaxMs: number;
  uploadBandwidthBytesPerSec: number | "unlimited";
  defaultTopicTiered: boolean;
  /** null: unlimited. */
  defaultLocalRetentionAgeMs: number | null;
  /** null: unlimited. */
  defaultLocalRetentionSizeBytes: number | null;
  housekeeping: HousekeepingConfig;
  retry: {
    transient: { initialMs: number; factor: number; maxMs: number };
    nonTransient: { initialMs: number; factor: number; maxMs: number };
  };
  s3: {
    bucket: string;
    region: string;
    endpoint: string;
    urlStyle: "auto" | "path" | "virtual";
    prefix: string;
    accessKey: string;
    secretKey: string;
    sessionToken: string;
    conditionalWrites: boolean;
    /** `connections`: connections per endpoint at most. */
    connectionsMax: number;
  };
  fs: {
    /** Resolved: objects/ under the data directory when the key is empty. */
    path: string;
  };
  cache: {
    /** Resolved: cache/ under the data directory when the key is empty. */
    path: string;
    sizeBytes: number;
    sizePercent: number;
    objectsMax: number;
    chunkBytes: number;
    readaheadChunksMax: number;
    /** Remote segments' indexes held in memory at most, over every shard. */
    indexBytes: number;
    lowWatermarkPercent: number;
    trimMinIntervalMs: number;
  };
}

export interface HousekeepingConfig {
  intervalMs: number;
  idleTimeoutMs: number;
  idleThresholdRps: number;
  /** `request_quota`: object-store requests one housekeeping run makes at most. */
  requestsPerRunMax: number;
  deleteBatchPerPass: number;
  /** `delete_pending_per_partition`: keys listed for deletion and queued for later runs, per partition. */
  deletePendingPerPartitionMax: number;
  deleteGraceMs: number;
  orphanSweepIntervalMs: number;
  manifestUploadIntervalMs: number;
  verifyIntervalMs: number;
  /** `merge_segments`: whether idle shards merge small remote segments (in a cluster, the leaders'). */
  mergeSegments: boolean;
  /** `merge_interval`: how long an idle shard waits to look for segments to merge after finding none. */
  mergeIntervalMs: number;
}

/** Maps validated snake_case keys to the typed object; validation already checked every value. */
export function toConfig(v: ValidatedConfig): Config {
  const system = v["system"]!;
  const http = v["http"]!;
  const log = v["log"]!;
  return {
    system: {
      path: system["path"] as string,
      tickIntervalMs: system["tick_interval"] as number,
      shards: system["shards"] as number,
      clusterId: system["cluster_id"] as string,
      fsync: system["fsync"] as FsyncSetting,
      fsyncIntervalMs: system["fsync_interval"] as number,
      indexIntervalBytes: system["index_interval_bytes"] as number,
      writeQueueMax: system["write_queue_max"] as number,
      producerIdExpirationMs: system["producer_id_expiration"] as number,
      externalMemoryReserveBytes: system["external_memory_reserve"] as number,
      loopThreadNice: system["loop_thread_nice"] as number,
      fdTableReserve: system["fd_table_reserve"] as number,
      maxOpenFiles: system["max_open_files"] as number,
      crc32c: system["crc32c"] as Crc32cSetting,
      crc32cLibrary: system["crc32c_library"] as string,
    },
    http: {
      address: http["address"] as Address,
      maxRequestBytes: http["max_request_bytes"] as number,
      tokens: http["tokens"] as readonly string[],
      advertisedAddress: http["advertised_address"] === ""
        ? null
        : parseAddress("[http] advertised_address", http["advertised_address"]),
    },
    kafka: toKafka(v),
    groups: toGroups(v),
    transactions: toTransactions(v),
    cluster: toCluster(v),
    log: { level: log["level"] as LogLevel },
    tieredStorage: toTieredStorage(v, system["path"] as string),
  };
}

function toGroups(v: ValidatedConfig): GroupsConfig {
  const g = v["groups"]!;
  return {
    offsetsTopicPartitions: g["offsets_topic_partitions"] as number,
    groupMembersMax: g["group_max_size"] as number,
    groupsMax: g["groups_max"] as number,
    offsetsPerGroupMax: g["offsets_per_group_max"] as number,
    sessionTimeoutMinMs: g["group_min_session_timeout"] as number,
    sessionTimeoutMaxMs: g["group_max_session_timeout"] as number,
    initialRebalanceDelayMs: g["group_initial_rebalance_delay"] as number,
    offsetMetadataBytesMax: g["offset_metadata_max_bytes"] as number,
    offsetsCheckpointBytes: g["offsets_checkpoint_bytes"] as number,
  };
}

function toTransactions(v: ValidatedConfig): TransactionsConfig {
  const t = v["transactions"]!;
  return {
    stateTopicPartitions: t["state_topic_partitions"] as number,
    transactionalIdsMax: t["transactional_ids_max"] as number,
    openTransactionsMax: t["open_transactions_max"] as number,
    partitionsPerTransactionMax: t["partitions_per_transaction_max"] as number,
    stateCheckpointBytes: t["state_checkpoint_bytes"] as number,
  };
}

function toTieredStorage(v: ValidatedConfig, dataPath: string): TieredStorageConfig {
  const t = v["tiered_storage"]!;
  const fs = v["tiered_storage.fs"]!;
  return {
    enabled: t["enabled"] as boolean,
    backend: t["backend"] as "fs" | "s3",
    segmentUploadTimeoutMs: t["segment_upload_timeout"] as number,
    readReplicaPollIntervalMs: t["read_replica_poll_interval"] as number,
    uploadStallAfterMs: t["upload_stall_after"] as number,
    fetchTimeoutMs: t["fetch_timeout"] as number,
    requestTimeoutMs: t["request_timeout"] as number,
    connectionIdleTimeoutMs: t["connection_idle_timeout"] as number,
    uploadConcurrency: t["upload_concurrency"] as number,
    fetchConcurrency: t["fetch_concurrency"] as number,
    fetchBandwidthBytesPerSec: t["fetch_bandwidth"] as number | "unlimited",
    uploadPieceBytes: t["upload_piece_size"] as number,
    uploadLoopBackoffMaxMs: t["upload_loop_backoff_max"] as number,
    uploadBandwidthBytesPerSec: t["upload_bandwidth"] as number | "unlimited",
    defaultTopicTiered: t["default_topic_tiered"] as boolean,
    defaultLocalRetentionAgeMs: orNull(t["default_local_retention_age"]),
    defaultLocalRetentionSizeBytes: orNull(t["default_local_retention_size"]),
    housekeeping: toHousekeeping(v),
    retry: toRetry(v),
    s3: toS3(v),
    fs: { path: (fs["path"] as string) === "" ? `${dataPath}/objects` : (fs["path"] as string) },
    cache: toCache(v, dataPath),
  };
}

function toCluster(v: ValidatedConfig): ClusterConfig {
  const c = v["cluster"]!;
  return {
    enabled: c["enabled"] as boolean,
    nodeId: c["node_id"] as number,
    etcdEndpoints: c["etcd_endpoints"] as readonly string[],
    etcdPrefix: c["etcd_prefix"] as string,
    etcdRequestTimeoutMs: c["etcd_request_timeout"] as number,
    leaseTtlMs: c["lease_ttl"] as number,
    replicationFactor: c["replication_factor"] as number,
    minInsyncReplicas: c["min_insync_replicas"] as number,
    replicaLagMaxMs: c["replica_lag_max"] as number,
    secret: c["secret"] as string,
  };
}

function toKafka(v: ValidatedConfig): KafkaConfig {
  const k = v["kafka"]!;
  return {
    enabled: k["enabled"] as boolean,
    address: k["address"] as Address,
    advertisedAddress: k["advertised_address"] === ""
      ? null
      : parseAddress("[kafka] advertised_address", k["advertised_address"]),
    maxFrameBytes: k["max_frame_bytes"] as number,
    connectionsMax: k["max_connections"] as number,
    requestsInFlightPerConnectionMax: k["max_in_flight_requests"] as number,
    connectionIdleTimeoutMs: k["connection_idle_timeout"] as number,
    autoCreateTopics: k["auto_create_topics"] as boolean,
    defaultPartitions: k["default_partitions"] as number,
    stream: k["stream"] as string,
    users: kafkaUsers(k["users"] as readonly string[]),
    allowUnauthenticated: k["allow_unauthenticated"] as boolean,
    transactionMaxTimeoutMs: k["transaction_max_timeout"] as number,
    transactionalIdExpirationMs: k["transactional_id_expiration"] as number,
  };
}

/** "name:password" entries by name; an entry without a name or a colon, or a name twice, is refused (never echoed). */
function kafkaUsers(entries: readonly string[]): Map<string, string> {
  const users = new Map<string, string>();
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(":");
    if (colon <= 0) {
      throw new ConfigError("[kafka] users", `entry ${i + 1} is not "name:password"`);
    }
    const name = entry.slice(0, colon);
    if (users.has(name)) throw new ConfigError("[kafka] users", `user ${name} is listed twice`);
    users.set(name, entry.slice(colon + 1));
  });
  return users;
}

function toHousekeeping(v: ValidatedConfig): HousekeepingConfig {
  const hk = v["tiered_storage.housekeeping"]!;
  return {
    intervalMs: hk["interval"] as number,
    idleTimeoutMs: hk["idle_timeout"] as number,
    idleThresholdRps: hk["idle_threshold_rps"] as number,
    requestsPerRunMax: hk["request_quota"] as number,
    deleteBatchPerPass: hk["delete_batch_per_pass"] as number,
    deletePendingPerPartitionMax: hk["delete_pending_per_partition"] as number,
    deleteGraceMs: hk["delete_grace"] as number,
    orphanSweepIntervalMs: hk["orphan_sweep_interval"] as number,
    manifestUploadIntervalMs: hk["manifest_upload_interval"] as number,
    verifyIntervalMs: hk["verify_interval"] as number,
    mergeSegments: hk["merge_segments"] as boolean,
    mergeIntervalMs: hk["merge_interval"] as number,
  };
}

function toRetry(v: ValidatedConfig): TieredStorageConfig["retry"] {
  const r = v["tiered_storage.retry"]!;
  // Both profiles have the same three keys, under their own prefix.
  const profile = (prefix: string) => ({
    initialMs: r[`${prefix}_initial`] as number,
    factor: r[`${prefix}_factor`] as number,
    maxMs: r[`${prefix}_max`] as number,
  });
  return { transient: profile("transient"), nonTransient: profile("non_transient") };
}

function toS3(v: ValidatedConfig): TieredStorageConfig["s3"] {
  const s3 = v["tiered_storage.s3"]!;
  return {
    bucket: s3["bucket"] as string,
    region: s3["region"] as string,
    endpoint: s3["endpoint"] as string,
    urlStyle: s3["url_style"] as "auto" | "path" | "virtual",
    prefix: s3["prefix"] as string,
    accessKey: s3["access_key"] as string,
    secretKey: s3["secret_key"] as string,
    sessionToken: s3["session_token"] as string,
    conditionalWrites: s3["conditional_writes"] as boolean,
    connectionsMax: s3["connections"] as number,
  };
}

/** The cache's keys; an empty path is cache/ under the data directory. */
function toCache(v: ValidatedConfig, dataPath: string): TieredStorageConfig["cache"] {
  const cache = v["tiered_storage.cache"]!;
  return {
    path: (cache["path"] as string) === "" ? `${dataPath}/cache` : (cache["path"] as string),
    sizeBytes: cache["size"] as number,
    sizePercent: cache["size_percent"] as number,
    objectsMax: cache["max_objects"] as number,
    readaheadChunksMax: cache["readahead_max"] as number,
    chunkBytes: cache["chunk_size"] as number,
    indexBytes: cache["index_size"] as number,
    lowWatermarkPercent: cache["low_watermark_percent"] as number,
    trimMinIntervalMs: cache["trim_min_interval"] as number,
  };
}

function orNull(value: unknown): number | null {
  return value === "unlimited" ? null : value as number;
}
