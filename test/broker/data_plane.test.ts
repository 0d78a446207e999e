import { join } from "node:path";
import t, { type Test } from "tap";
import {
  ConsumerLimitError,
  RemoteDataError,
  ResourceNotFoundError,
  TieringDisabledError,
  UnavailableError,
} from "../../src/broker/broker_errors.ts";
import { Catalog } from "../../src/broker/catalog/catalog.ts";
import { DataPlane } from "../../src/broker/data_plane.ts";
import { translateDataErrors } from "../../src/broker/data_errors.ts";
import { PartitionOpener } from "../../src/broker/catalog/partition_opener.ts";
import {
  partitionOfKey,
  shardIndexOf,
  ShardRuntime,
  ShardSet,
} from "../../src/broker/shards/shard_runtime.ts";
import {
  maxMessageBytesDefault,
  segmentSizeBytesMin,
  type TopicOptions,
} from "../../src/broker/catalog/topic_options.ts";
import { loadConfig } from "../../src/config/load_config.ts";
import { TooManyConsumersError } from "../../src/log/partition/consumer_offsets.ts";
import {
  PartitionUnavailableError,
  RemoteReadUnavailableError,
  WriteQueueFullError,
} from "../../src/log/log_errors.ts";
import { consumersPerPartitionMax } from "../../src/log/partition/partition.ts";
import { RemoteCorruptError, RemoteDataLossError } from "../../src/log/remote/remote_reader.ts";
import { NotFoundError, ThrottledError, TransportError } from "../../src/objectstore/object_store_errors.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { QueueFullError } from "../../src/runtime/wait_errors.ts";
import { createMetricsRegistry } from "../../src/runtime/metrics/metrics.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { PieceGate } from "../../src/runtime/cooperation/piece_gate.ts";
import { Pump } from "../../src/runtime/cooperation/pump.ts";
import { PumpMetrics } from "../../src/runtime/cooperation/pump_metrics.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { Semaphore } from "../../src/runtime/cooperation/semaphore.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { CacheFullError, FetchTimeoutError } from "../../src/tier/cache/chunk_cache.ts";
import { MemoryMetadataStore } from "../helpers/memory_metadata_store.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const message = (key: string | null, text = "m") => ({
  key,
  headers: {},
  payload: new TextEncoder().encode(text),
});

const twoPartitions: TopicOptions = {
  partitions: 2,
  segmentSizeBytes: segmentSizeBytesMin,
  segmentMaxAgeMs: null,
  retentionMaxAgeMs: null,
  retentionMaxBytes: null,
  tiered: false,
  localRetentionAgeMs: null,
  localRetentionSizeBytes: null,
  retentionConsumerBarrier: true,
  timestampType: "create_time",
  maxMessageBytes: maxMessageBytesDefault,
  replicationFactor: null,
  readReplicaOf: null,
};

/** A data plane over a catalog and two shards without tiered storage; the pumps are not started. */
async function openDataPlane(t: Test) {
  await initCrc32c();
  const dataPath = join(tempDir(t), "data");
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: dataPath });
  const disk = new NodeDisk();
  const clock = new VirtualClock();
  const logger = silentLogger();
  const pumpMetrics = new PumpMetrics(createMetricsRegistry());
  const gate = new PieceGate();
  const shards = new ShardSet([0, 1].map((id) =>
    new ShardRuntime({
      id,
      pump: new Pump({ clock, metrics: pumpMetrics, logger, shard: String(id), tickIntervalMs: 10 }),
      logger,
      pieceGate: gate,
      clock,
      tiering: null,
    })
  ));
  const store = new MemoryMetadataStore();
  await store.load();
  await disk.mkdirp(`${dataPath}/streams`);
  const catalog = await Catalog.open({
    store,
    disk,
    clock,
    logger,
    partitions: new PartitionOpener({ disk, clock, rng: new Rng(7), logger, settings: config.system }),
    host: shards,
    topicDefaults: { tiered: false, localRetentionAgeMs: null, localRetentionSizeBytes: null },
  });
  t.teardown(async () => {
    await shards.close();
    await catalog.close();
  });
  await catalog.createStream("s");
  await catalog.createTopic("s", "t", twoPartitions);
  return { plane: new DataPlane(catalog, shards), shards };
}

t.test("produce places messages by partition, by key, or round robin, and says where they went", async (t) => {
  const { plane } = await openDataPlane(t);
  t.same(await plane.produce("s", "t", 1, [message(null)]), { partition: 1, baseOffset: 0, count: 1 });
  const keyed = partitionOfKey("user-42", 2);
  t.same(await plane.produce("s", "t", undefined, [message("user-42"), message("x")]), {
    partition: keyed,
    baseOffset: keyed === 1 ? 1 : 0,
    count: 2,
  });
  const spread = [];
  for (let i = 0; i < 4; i++) {
    spread.push((await plane.produce("s", "t", undefined, [message(null)])).partition);
  }
  t.same(spread, [0, 1, 0, 1], "keyless batches go round robin");
});

t.test("poll reads what was produced and counts a request on the partition's shard", async (t) => {
  const { plane, shards } = await openDataPlane(t);
  await plane.produce("s", "t", 0, [message(null, "a"), message(null, "b")]);
  const shard = shards.shards[shardIndexOf({ streamId: 1, topicId: 1, partitionId: 0 }, 2)]!;
  const before = shard.requestsServed;
  const read = await plane.poll("s", "t", 0, { offset: 1, count: 10, maxBytes: 1 << 20 });
  t.same(read.messages.map((m) => new TextDecoder().decode(m.payload!)), ["b"]);
  t.equal(read.nextOffset, 2);
  read.release();
  t.equal(shard.requestsServed, before + 1);
  const stats = plane.partitionStats("s", "t", 0);
  t.match(stats, { shard: shard.id, firstOffset: 0, nextOffset: 2, remoteSizeBytes: 0, tieredUpToOffset: 0 });
  t.equal(stats.localSizeBytes, stats.sizeBytes, "everything is local");
});

t.test("consumer offsets are stored and read back; a missing one and the tiered floor are refused, typed", async (t) => {
  const { plane } = await openDataPlane(t);
  t.throws(
    () => plane.consumerOffset("s", "t", 1, "c"),
    new ResourceNotFoundError("Cannot get offset of consumer c: none is stored"),
  );
  await plane.storeConsumerOffset("s", "t", 1, "c", 7);
  t.equal(plane.consumerOffset("s", "t", 1, "c"), 7);
  t.throws(
    () => plane.awaitTiered("s", "t", 0, 1, 1000),
    new TieringDisabledError("Cannot await the tiered floor: tiered storage is not enabled"),
  );
  await t.rejects(plane.produce("s", "t", 2, [message(null)]), ResourceNotFoundError);
  await t.rejects(plane.produce("s", "nope", 0, [message(null)]), ResourceNotFoundError);
});

t.test("past the partition's consumer limit a store is refused as a consumer limit, with the log's error as cause", async (t) => {
  const { plane } = await openDataPlane(t);
  for (let i = 0; i < consumersPerPartitionMax; i++) await plane.storeConsumerOffset("s", "t", 0, `c${i}`, i);
  const refused = await plane.storeConsumerOffset("s", "t", 0, "one-more", 0).catch((e) => e);
  t.ok(refused instanceof ConsumerLimitError);
  t.ok(refused.cause instanceof TooManyConsumersError);
  t.equal(
    refused.message,
    `Cannot store consumer offset: the partition already has ${consumersPerPartitionMax} consumers`,
  );
  await plane.storeConsumerOffset("s", "t", 0, "c0", 99);
  t.equal(plane.consumerOffset("s", "t", 0, "c0"), 99, "a stored consumer still moves");
});

/** The refusal of a semaphore whose wait queue is full, as a shard's fetch slots refuse one fetch too many. */
async function fetchSlotsFull(): Promise<QueueFullError> {
  const slots = new Semaphore({ permits: 1, waitersMax: 0, name: "fetch slot" });
  using _held = await slots.acquire();
  return await slots.acquire().catch((e) => e);
}

t.test("the log's and the remote path's failures become the broker's, keeping message and cause", async (t) => {
  const queueFull = await fetchSlotsFull();
  t.ok(queueFull instanceof QueueFullError, "the fetch slots shed a waiter too many");
  const cases: [Error, (e: unknown) => boolean][] = [
    [new WriteQueueFullError("1/1/0", 8), (e) => e instanceof UnavailableError && e.reason === "overloaded"],
    [queueFull, (e) => e instanceof UnavailableError && e.reason === "overloaded"],
    [
      new PartitionUnavailableError("1/1/0", "fsync failed"),
      (e) => e instanceof UnavailableError && e.reason === "partition_unavailable",
    ],
    [
      new RemoteReadUnavailableError("1/1/0", 0),
      (e) => e instanceof UnavailableError && e.reason === "remote_read_unavailable",
    ],
    [new CacheFullError(1024), (e) => e instanceof UnavailableError && e.reason === "transient"],
    [new FetchTimeoutError(5000), (e) => e instanceof UnavailableError && e.reason === "transient"],
    [new TransportError("reset"), (e) => e instanceof UnavailableError && e.reason === "transient"],
    [new ThrottledError("slow down", 503), (e) => e instanceof UnavailableError && e.reason === "transient"],
    [new NotFoundError("no such key", 404), (e) => e instanceof RemoteDataError && e.kind === "missing"],
    [new RemoteDataLossError("1/1/0", 0, "k"), (e) => e instanceof RemoteDataError && e.kind === "missing"],
    [new RemoteCorruptError("1/1/0", 0, 0), (e) => e instanceof RemoteDataError && e.kind === "corrupt"],
  ];
  for (const [cause, expected] of cases) {
    const error = await translateDataErrors(() => Promise.reject(cause)).catch((e) => e);
    t.ok(expected(error), `${cause.name} becomes ${error.name}`);
    t.equal(error.message, cause.message);
    t.equal(error.cause, cause);
  }
  const other = new TooManyConsumersError(1024);
  t.equal(
    await translateDataErrors(() => Promise.reject(other)).catch((e) => e),
    other,
    "others pass as they are",
  );
  t.equal(await translateDataErrors(() => Promise.resolve(3)), 3);
});
