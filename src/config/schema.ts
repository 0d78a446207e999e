import { externalMemoryReserveBytesMax } from "../runtime/memory/external_memory_reserve.ts";
import { logLevels } from "../runtime/logger.ts";
import { niceMax, niceMin } from "../runtime/process/thread_priority.ts";
import { fdTableReserveMax } from "../runtime/process/fd_table_reserve.ts";
import { maxOpenFilesMax } from "../runtime/disk/open_files.ts";
import type { ConfigSchema } from "./key_spec.ts";

/**
 * Every configuration key Strata knows, with its type, default and bounds. The shipped
 * `config.toml` lists the same keys with the same defaults (a test holds the two together), and
 * `docs/CONFIG.md` explains them. Durations are in milliseconds and sizes in bytes once parsed.
 */
export const configSchema = {
  system: {
    /** The data directory: logs, superblocks, the local object store and the cache live under it. */
    path: { kind: "string", default: "./data", nonEmpty: true },
    /** How often each shard's pump fires the consensus tick. */
    tick_interval: { kind: "duration", default: 10, min: 1, max: 1000 },
    /** Logical shards, each with its own pump; partitions are assigned by a stable hash. */
    shards: { kind: "int", default: 1, min: 1, max: 64 },
    /** Names this cluster in object keys; empty generates a random one at first boot. */
    cluster_id: { kind: "string", default: "" },
    /** "always": a produce is acknowledged after its fsync (group commit); "interval": after its write. */
    fsync: { kind: "enum", default: "always", values: ["always", "interval"] },
    /** With fsync = "interval", how often the active segments are fsynced. */
    fsync_interval: { kind: "duration", default: 1000, min: 1, max: 3_600_000 },
    /** Log bytes between two sparse index entries. */
    index_interval_bytes: { kind: "bytes", default: 4096, min: 256, max: 1024 * 1024 },
    /** Writes queued per partition before producers get 503. */
    write_queue_max: { kind: "int", default: 4096, min: 1, max: 1_000_000 },
    /**
     * How long a partition keeps an idempotent producer's state after its last batch's timestamp
     * (Kafka's `producer.id.expiration.ms`); a producer forgotten may start again at any sequence.
     */
    producer_id_expiration: { kind: "duration", default: 86_400_000, min: 1000, max: 365 * 86_400_000 },
    /**
     * Address space held, never touched, and counted by the JavaScript engine as external memory,
     * so that dead response buffers leave room before a full garbage collection (0 turns it off).
     */
    external_memory_reserve: {
      kind: "bytes",
      default: 512 * 1024 * 1024,
      min: 0,
      max: externalMemoryReserveBytesMax,
    },
    /**
     * Nice value of the event loop's thread, which runs the consensus tick; a negative one needs
     * CAP_SYS_NICE or RLIMIT_NICE, and without it the server warns and keeps its own (0: leave it).
     */
    loop_thread_nice: { kind: "int", default: -10, min: niceMin, max: niceMax },
    /**
     * Descriptors the server holds once at start-up so that the kernel's descriptor table has room
     * for them before serving: each doubling of the table blocks the opening thread (0: off).
     */
    fd_table_reserve: { kind: "int", default: 1024, min: 0, max: fdTableReserveMax },
    /**
     * Files held open between uses (the active segments' `.log`, and the `.index` a seal writes) at most, whatever the
     * number of partitions: past it the least recently used idle one is closed, synced first.
     */
    max_open_files: { kind: "int", default: 4096, min: 1, max: maxOpenFilesMax },
    /**
     * Which CRC32C computes every batch's and record file's checksum: "native" (`crc32c_library`,
     * the CPU's instructions; start-up fails without it), "wasm", or "auto" (native when it loads).
     */
    crc32c: { kind: "enum", default: "auto", values: ["auto", "native", "wasm"] },
    /** The shared library "native" CRC32C opens: Intel's ISA-L (Debian's `libisal2`). */
    crc32c_library: { kind: "string", default: "libisal.so.2", nonEmpty: true },
  },
  http: {
    /** Where the HTTP API listens; port 0 picks a free port. */
    address: { kind: "address", default: "127.0.0.1:8080" },
    /** Largest request body accepted; larger ones get 413. */
    max_request_bytes: { kind: "bytes", default: 16 * 1024 * 1024, min: 1024, max: 1024 * 1024 * 1024 },
    /** Bearer tokens; when any is set, every request needs one. Secret: never printed. */
    tokens: { kind: "strings", default: [], secret: true, itemsMax: 64 },
    /** "host:port" other nodes and clients reach the HTTP API at (redirects); empty: the address listened on. */
    advertised_address: { kind: "string", default: "" },
  },
  kafka: {
    /** Serves the Kafka wire protocol on `address`. */
    enabled: { kind: "bool", default: true },
    /** Where the Kafka listener listens; port 0 picks a free port. */
    address: { kind: "address", default: "127.0.0.1:9092" },
    /** "host:port" clients are told to connect to (Metadata); empty: the address listened on. */
    advertised_address: { kind: "string", default: "" },
    /** Largest request frame; a larger one closes its connection. */
    max_frame_bytes: { kind: "bytes", default: 100 * 1024 * 1024, min: 64 * 1024, max: 1024 * 1024 * 1024 },
    /** Connections served at once; one more is closed as it is accepted. */
    max_connections: { kind: "int", default: 1024, min: 1, max: 65_536 },
    /** Requests of one connection read and not yet answered; past it the connection is not read. */
    max_in_flight_requests: { kind: "int", default: 32, min: 1, max: 1024 },
    /** A connection with no request read and no answer owed or written this long is closed. */
    connection_idle_timeout: { kind: "duration", default: 600_000, min: 1000, max: 86_400_000 },
    /** A Metadata request for a topic that does not exist creates it. */
    auto_create_topics: { kind: "bool", default: true },
    /** Partitions of a topic created on first use (a topic has at most 1024). */
    default_partitions: { kind: "int", default: 1, min: 1, max: 1024 },
    /** The stream Kafka topics live in; the HTTP API sees them under it. */
    stream: { kind: "string", default: "kafka", nonEmpty: true },
    /**
     * SASL/PLAIN users as "name:password" (the name before the first colon); when any is set, every
     * connection authenticates first. Secret: never printed.
     */
    users: { kind: "strings", default: [], secret: true, itemsMax: 1024 },
    /** Serve a non-loopback address without authentication: start-up refuses it otherwise. */
    allow_unauthenticated: { kind: "bool", default: false },
    /** The longest `transaction.timeout.ms` a transactional producer may ask; longer: INVALID_TRANSACTION_TIMEOUT. */
    transaction_max_timeout: { kind: "duration", default: 900_000, min: 1000, max: 86_400_000 },
    /** A transactional id idle this long between transactions is forgotten (its producer id with it). */
    transactional_id_expiration: {
      kind: "duration",
      default: 604_800_000,
      min: 1000,
      max: 365 * 86_400_000,
    },
  },
  transactions: {
    /**
     * Partitions of the internal topic `__transaction_state`, which holds transactional ids' states;
     * an id's coordinator is the leader of its partition. Read when the topic is created.
     */
    state_topic_partitions: { kind: "int", default: 16, min: 1, max: 1024 },
    /** Transactional ids the node coordinates at most; an InitProducerId for one more is refused. */
    transactional_ids_max: { kind: "int", default: 100_000, min: 1, max: 10_000_000 },
    /** Transactions open at once among the ids one partition coordinates, at most. */
    open_transactions_max: { kind: "int", default: 10_000, min: 1, max: 1_000_000 },
    /** Partitions one transaction writes to at most (`__consumer_offsets` ones included). */
    partitions_per_transaction_max: { kind: "int", default: 1000, min: 1, max: 100_000 },
    /**
     * Bytes appended to a transaction state partition since its last checkpoint before the next: the
     * ids' states are written again and the segments wholly below them deleted.
     */
    state_checkpoint_bytes: {
      kind: "bytes",
      default: 16 * 1024 * 1024,
      min: 64 * 1024,
      max: 1024 * 1024 * 1024,
    },
  },
  groups: {
    /**
     * Partitions of the internal topic `__consumer_offsets`, which holds committed offsets and group
     * metadata; a group's coordinator is the leader of its partition. Read when the topic is created.
     */
    offsets_topic_partitions: { kind: "int", default: 16, min: 1, max: 1024 },
    /** Members (and member ids given out, not yet joined) of one group at most; one more is refused. */
    group_max_size: { kind: "int", default: 1000, min: 1, max: 100_000 },
    /** Groups the node coordinates at most; a join or commit that would create one more is refused. */
    groups_max: { kind: "int", default: 10_000, min: 1, max: 1_000_000 },
    /** Committed partitions one group holds at most; a commit that would add one more is refused. */
    offsets_per_group_max: { kind: "int", default: 100_000, min: 1, max: 10_000_000 },
    /** A join's session timeout must lie between these two. */
    group_min_session_timeout: { kind: "duration", default: 6000, min: 1, max: 3_600_000 },
    group_max_session_timeout: { kind: "duration", default: 1_800_000, min: 1, max: 3_600_000 },
    /**
     * How long an empty group's first rebalance waits for more members, extended by as much for each
     * that joins, up to the rebalance timeout (0: none).
     */
    group_initial_rebalance_delay: { kind: "duration", default: 3000, min: 0, max: 300_000 },
    /** Longest metadata string a commit may attach to an offset; longer: OFFSET_METADATA_TOO_LARGE. */
    offset_metadata_max_bytes: { kind: "bytes", default: 4096, min: 0, max: 1024 * 1024 },
    /**
     * Bytes appended to an offsets partition since its last checkpoint before the next: the live
     * offsets and groups are written again and the segments wholly below them deleted.
     */
    offsets_checkpoint_bytes: {
      kind: "bytes",
      default: 16 * 1024 * 1024,
      min: 64 * 1024,
      max: 1024 * 1024 * 1024,
    },
  },
  cluster: {
    /** Runs as one node of a cluster coordinated by etcd; false: a single node, as without a cluster. */
    enabled: { kind: "bool", default: false },
    /** This node's id, unique in the cluster: its Kafka broker id. */
    node_id: { kind: "int", default: 1, min: 1, max: 2_147_483_647 },
    /** Client URLs of the etcd members, such as "http://127.0.0.1:2379". */
    etcd_endpoints: { kind: "strings", default: ["http://127.0.0.1:2379"], itemsMax: 16 },
    /** The first part of every key the cluster keeps in etcd; clusters sharing an etcd need their own. */
    etcd_prefix: { kind: "string", default: "/strata", nonEmpty: true },
    /** Deadline of one request to one etcd member. */
    etcd_request_timeout: { kind: "duration", default: 1000, min: 100, max: 60_000 },
    /**
     * This node's etcd lease, in whole seconds: a node whose keepalives stop is declared gone this
     * long after its last one, and a leader whose last keepalive is older stops acknowledging.
     */
    lease_ttl: { kind: "duration", default: 2000, min: 1000, max: 60_000 },
    /** Replicas of a new topic's partitions, unless the topic says otherwise (at most the live nodes). */
    replication_factor: { kind: "int", default: 3, min: 1, max: 16 },
    /** In-sync replicas, the leader among them, an acks=all produce needs; fewer: NOT_ENOUGH_REPLICAS. */
    min_insync_replicas: { kind: "int", default: 2, min: 1, max: 16 },
    /** A follower that has not caught up with the leader's log end for this long leaves the in-sync set. */
    replica_lag_max: { kind: "duration", default: 10_000, min: 100, max: 600_000 },
    /** Shared by the cluster's nodes: the credentials of replica fetches and node-to-node calls. Secret. */
    secret: { kind: "string", default: "", secret: true },
  },
  log: {
    level: { kind: "enum", default: "info", values: logLevels },
  },
  tiered_storage: {
    /** Probes the object store at boot and runs a tier service per shard. */
    enabled: { kind: "bool", default: true },
    backend: { kind: "enum", default: "fs", values: ["fs", "s3"] },
    /** Deadline of one segment upload, retries included. */
    segment_upload_timeout: { kind: "duration", default: 90_000, min: 1000, max: 3_600_000 },
    /**
     * A read-replica topic's follower polls its source's manifests this long after its last poll
     * ended (one listing per source topic, a conditional GET per changed manifest).
     */
    read_replica_poll_interval: { kind: "duration", default: 10_000, min: 100, max: 86_400_000 },
    /**
     * Uploads count as stalled (`strata_tier_upload_stalled_offset`) once sealed segments have waited
     * this long without the floor moving while their uploads fail or hang, whatever the error.
     */
    upload_stall_after: { kind: "duration", default: 120_000, min: 1000, max: 86_400_000 },
    /**
     * How long a poll waits for a remote read (a chunk or a first range) before it answers 503
     * `transient`; the fetch goes on under `request_timeout` and fills the cache for the retry.
     * Below the 10 s read timeout.
     */
    fetch_timeout: { kind: "duration", default: 5000, min: 100, max: 9999 },
    /** Deadline of one HEAD, LIST, DELETE or cache fetch (a chunk or first range), retries included. */
    request_timeout: { kind: "duration", default: 30_000, min: 100, max: 600_000 },
    /** Idle connections to the store are closed after this. */
    connection_idle_timeout: { kind: "duration", default: 5000, min: 100, max: 600_000 },
    /** Uploads in flight per shard. */
    upload_concurrency: { kind: "int", default: 1, min: 1, max: 64 },
    /** Chunk fetches in flight per shard; uploads never share these permits. */
    fetch_concurrency: { kind: "int", default: 4, min: 1, max: 64 },
    /** Download pacing per node in bytes per second, divided among shards. */
    fetch_bandwidth: {
      kind: "bytes",
      default: "unlimited",
      min: 1024,
      max: Number.MAX_SAFE_INTEGER,
      unlimited: true,
    },
    /** Read, hash and send unit of an upload; one yield per piece, two pieces held (one read ahead). */
    upload_piece_size: { kind: "bytes", default: 1024 * 1024, min: 64 * 1024, max: 16 * 1024 * 1024 },
    /** Longest pause of the upload scan while it finds nothing. */
    upload_loop_backoff_max: { kind: "duration", default: 10_000, min: 100, max: 600_000 },
    /** Upload pacing per shard, bytes per second. */
    upload_bandwidth: {
      kind: "bytes",
      default: "unlimited",
      min: 1024,
      max: Number.MAX_SAFE_INTEGER,
      unlimited: true,
    },
    /** New topics are tiered unless they say otherwise. */
    default_topic_tiered: { kind: "bool", default: true },
    /** Local envelope of new topics: local copies older than this are evicted once uploaded. */
    default_local_retention_age: {
      kind: "duration",
      default: 86_400_000,
      min: 1000,
      max: Number.MAX_SAFE_INTEGER,
      unlimited: true,
    },
    /** Local envelope of new topics, per partition: local bytes above this are evicted once uploaded. */
    default_local_retention_size: {
      kind: "bytes",
      default: "unlimited",
      min: 1024 * 1024,
      max: Number.MAX_SAFE_INTEGER,
      unlimited: true,
    },
  },
  "tiered_storage.housekeeping": {
    /** Housekeeping runs at least this often, busy or not. */
    interval: { kind: "duration", default: 300_000, min: 1000, max: 86_400_000 },
    /** A shard whose request rate stayed below idle_threshold_rps this long runs housekeeping early. */
    idle_timeout: { kind: "duration", default: 10_000, min: 100, max: 3_600_000 },
    /** Produce and poll requests per second under which a shard counts as idle. */
    idle_threshold_rps: { kind: "int", default: 10, min: 0, max: 1_000_000 },
    /** Object-store requests one housekeeping run may spend, all jobs together. */
    request_quota: { kind: "int", default: 5000, min: 1, max: 1_000_000 },
    /** Keys one run deletes at most per partition. */
    delete_batch_per_pass: { kind: "int", default: 300, min: 1, max: 1000 },
    /**
     * Keys a deletion listing queues per partition for later runs, beyond the batch it deletes;
     * past it the keys are listed again once the queue has drained.
     */
    delete_pending_per_partition: { kind: "int", default: 5000, min: 1, max: 100_000 },
    /** No object is deleted sooner than this after it became deletable, nor while younger than this. */
    delete_grace: { kind: "duration", default: 60_000, min: 1000, max: 604_800_000 },
    /** How often shard 0 lists the cluster prefix for incarnations that no longer exist. */
    orphan_sweep_interval: { kind: "duration", default: 3_600_000, min: 1000, max: 604_800_000 },
    /** Least time between two manifest uploads of one partition. */
    manifest_upload_interval: { kind: "duration", default: 60_000, min: 1000, max: 86_400_000 },
    /** How often every key below each partition's floor is HEADed and compared with the marker. */
    verify_interval: { kind: "duration", default: 3_600_000, min: 1000, max: 604_800_000 },
    /** Whether idle shards merge runs of small remote segments into objects of about `segment_size`. */
    merge_segments: { kind: "bool", default: true },
    /** How long an idle shard waits to look for segments to merge again after a look found none. */
    merge_interval: { kind: "duration", default: 60_000, min: 1000, max: 86_400_000 },
  },
  "tiered_storage.retry": {
    transient_initial: { kind: "duration", default: 10, min: 1, max: 60_000 },
    transient_factor: { kind: "int", default: 2, min: 1, max: 10 },
    transient_max: { kind: "duration", default: 5000, min: 1, max: 600_000 },
    non_transient_initial: { kind: "duration", default: 1000, min: 1, max: 600_000 },
    non_transient_factor: { kind: "int", default: 2, min: 1, max: 10 },
    non_transient_max: { kind: "duration", default: 30_000, min: 1, max: 3_600_000 },
  },
  "tiered_storage.s3": {
    bucket: { kind: "string", default: "" },
    /** Empty: AWS_REGION, else us-east-1. */
    region: { kind: "string", default: "" },
    /** Empty: AWS (https://s3.{region}.amazonaws.com); set for RGW, MinIO, R2. */
    endpoint: { kind: "string", default: "" },
    url_style: { kind: "enum", default: "auto", values: ["auto", "path", "virtual"] },
    /** First part of every object key. */
    prefix: { kind: "string", default: "strata", nonEmpty: true },
    /** Empty: AWS_ACCESS_KEY_ID. */
    access_key: { kind: "string", default: "", secret: true },
    /** Empty: AWS_SECRET_ACCESS_KEY. */
    secret_key: { kind: "string", default: "", secret: true },
    /** Empty: AWS_SESSION_TOKEN. */
    session_token: { kind: "string", default: "", secret: true },
    /** Use If-None-Match: * when the boot probe finds the store honours it; otherwise HEAD then PUT. */
    conditional_writes: { kind: "bool", default: true },
    /** Connections per endpoint. */
    connections: { kind: "int", default: 16, min: 1, max: 1024 },
  },
  "tiered_storage.cache": {
    /** Empty: cache/ under the data directory; one subdirectory per shard. */
    path: { kind: "string", default: "" },
    /** Budget of the chunk cache, divided among shards. */
    size: {
      kind: "bytes",
      default: 4 * 1024 * 1024 * 1024,
      min: 16 * 1024 * 1024,
      max: Number.MAX_SAFE_INTEGER,
    },
    /** Budget cap as a share of the data disk's capacity; the smaller of this and size wins. */
    size_percent: { kind: "int", default: 20, min: 1, max: 100 },
    max_objects: { kind: "int", default: 100_000, min: 16, max: 10_000_000 },
    /** Chunks fetched ahead of a sequential reader at most (doubling from one); 0 turns readahead off. */
    readahead_max: { kind: "int", default: 4, min: 0, max: 64 },
    /** Unit of remote reads; boundaries snap to batch starts. A multiple of 4096 (`checkCache`). */
    chunk_size: { kind: "bytes", default: 8 * 1024 * 1024, min: 1024 * 1024, max: 64 * 1024 * 1024 },
    /**
     * Remote segments' sparse indexes held in memory, divided among shards: loaded on a segment's
     * first read, the least recently used dropped first.
     */
    index_size: { kind: "bytes", default: 64 * 1024 * 1024, min: 1024 * 1024, max: 64 * 1024 * 1024 * 1024 },
    low_watermark_percent: { kind: "int", default: 80, min: 10, max: 99 },
    trim_min_interval: { kind: "duration", default: 5000, min: 0, max: 3_600_000 },
  },
  "tiered_storage.fs": {
    /** Empty: objects/ under the data directory. */
    path: { kind: "string", default: "" },
  },
} as const satisfies ConfigSchema;
