import { existsSync, mkdirSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import {
  AlreadyExistsError,
  InvalidNameError,
  ResourceNotFoundError,
  UnavailableError,
} from "../../../src/broker/broker_errors.ts";
import {
  adminWaitersMax,
  Catalog,
  type PartitionHost,
  partitionsPerPieceMax,
} from "../../../src/broker/catalog/catalog.ts";
import type { Metadata } from "../../../src/broker/metadata/metadata.ts";
import { PartitionOpener } from "../../../src/broker/catalog/partition_opener.ts";
import {
  maxMessageBytesDefault,
  segmentSizeBytesMin,
  type TopicDefaults,
  type TopicOptions,
} from "../../../src/broker/catalog/topic_options.ts";
import { StrataApiError } from "../../../src/client/strata_client.ts";
import { loadConfig } from "../../../src/config/load_config.ts";
import { labelOf, type Partition } from "../../../src/log/partition/partition.ts";
import { superblockFileName } from "../../../src/log/partition/superblock.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { QueueFullError } from "../../../src/runtime/wait_errors.ts";
import { Logger, silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { MemoryMetadataStore } from "../../helpers/memory_metadata_store.ts";
import { openServer } from "../../helpers/open_server.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const defaults: TopicDefaults = { tiered: false, localRetentionAgeMs: null, localRetentionSizeBytes: null };
const options = (overrides: Partial<TopicOptions>): TopicOptions => ({
  partitions: 1,
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
  ...overrides,
});

/** Records what the catalog asks of the shards. */
class RecordingHost implements PartitionHost {
  readonly hosted = new Set<string>();
  readonly released: string[] = [];
  readonly purgedLabels: string[] = [];
  /** The loop turn (`turns.count`) at which each partition was hosted, in hosting order. */
  readonly hostedAtTurn: number[] = [];
  readonly turns = { count: 0 };
  host(partition: Partition): void {
    this.hosted.add(labelOf(partition.address));
    this.hostedAtTurn.push(this.turns.count);
  }
  release(partition: Partition): void {
    this.hosted.delete(labelOf(partition.address));
    this.released.push(labelOf(partition.address));
  }
  purged(partition: Partition): void {
    this.purgedLabels.push(labelOf(partition.address));
  }
}

/** A catalog on an in-memory metadata store and a real data directory. */
async function openCatalog(
  t: Test,
  store = new MemoryMetadataStore(),
  dataPath = join(tempDir(t), "data"),
  logger = silentLogger(),
) {
  await initCrc32c();
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: dataPath });
  const disk = new NodeDisk();
  const clock = new VirtualClock();
  const host = new RecordingHost();
  await store.load();
  mkdirSync(join(dataPath, "streams"), { recursive: true });
  const catalog = await Catalog.open({
    store,
    disk,
    clock,
    logger,
    partitions: new PartitionOpener({ disk, clock, rng: new Rng(7), logger, settings: config.system }),
    host,
    topicDefaults: defaults,
  });
  let closed = false;
  const close = async () => {
    if (!closed) await catalog.close();
    closed = true;
  };
  t.teardown(close);
  return { catalog, store, host, dataPath, close };
}

t.test("the catalog keeps streams and topics in whatever metadata store it is given", async (t) => {
  const { catalog, store, host } = await openCatalog(t);
  const stream = await catalog.createStream("s");
  t.match(stream, { id: 1, name: "s", nextTopicId: 1, topics: [] });
  const created = await catalog.createTopic("s", "t", options({ partitions: 2 }));
  t.match(created, { meta: { id: 1, name: "t", options: { partitions: 2 } }, sizeBytes: 0 });
  t.equal(store.commits, 2, "one commit per change");
  t.same(store.doc.streams.map((s) => [s.name, s.topics.map((x) => x.name)]), [["s", ["t"]]]);
  t.same([...host.hosted].sort(), ["1/1/0", "1/1/1"], "every partition handed to the shards");
  t.equal(catalog.topic("s", "t").slots.length, 2);
  t.equal(catalog.openPartition(catalog.topic("s", "t"), 1).address.partitionId, 1);
  t.equal(catalog.clusterId, "c0ffee");
});

t.test("refusals are typed: a bad name, a duplicate, an unknown stream, topic or partition", async (t) => {
  const { catalog } = await openCatalog(t);
  await catalog.createStream("s");
  await catalog.createTopic("s", "t", options({}));
  await t.rejects(catalog.createStream("../x"), InvalidNameError);
  await t.rejects(
    catalog.createStream("s"),
    new AlreadyExistsError("Cannot create stream s: it already exists"),
  );
  await t.rejects(
    catalog.createTopic("s", "t", options({})),
    new AlreadyExistsError("Cannot create topic s/t: it already exists"),
  );
  await t.rejects(
    catalog.createTopic("nope", "t", options({})),
    new ResourceNotFoundError("Cannot find stream nope"),
  );
  t.throws(() => catalog.topic("s", "u"), new ResourceNotFoundError("Cannot find topic s/u"));
  t.throws(() => catalog.topic("nope", "u"), new ResourceNotFoundError("Cannot find stream nope"));
  t.throws(
    () => catalog.openPartition(catalog.topic("s", "t"), 1),
    new ResourceNotFoundError("Cannot find partition 1 of s/t: it has 1"),
  );
});

t.test("a topic whose commit fails leaves no directory, no hosted partition and no name", async (t) => {
  const { catalog, store, host, dataPath } = await openCatalog(t);
  await catalog.createStream("s");
  store.failNextCommit = new Error("store down");
  await t.rejects(catalog.createTopic("s", "t", options({ partitions: 3 })), /store down/);
  t.notOk(existsSync(join(dataPath, "streams/1/topics/1")), "the partitions' directories are removed");
  t.equal(host.hosted.size, 0, "nothing was handed to the shards");
  t.throws(() => catalog.topic("s", "t"), ResourceNotFoundError);
  t.match(await catalog.createTopic("s", "t", options({})), { meta: { id: 1 } }, "the id was not used up");
});

t.test("a delete commits, then releases the partitions and removes the directories", async (t) => {
  const { catalog, store, host, dataPath } = await openCatalog(t);
  await catalog.createStream("s");
  await catalog.createTopic("s", "t", options({ partitions: 2 }));
  await catalog.createTopic("s", "u", options({}));
  await catalog.deleteTopic("s", "t");
  t.same(store.doc.streams[0]!.topics.map((x) => x.name), ["u"]);
  t.same(host.released.sort(), ["1/1/0", "1/1/1"]);
  t.notOk(existsSync(join(dataPath, "streams/1/topics/1")));
  await catalog.deleteStream("s");
  t.same(store.doc.streams, []);
  t.same([...host.hosted], [], "the stream's other topic is released too");
  t.notOk(existsSync(join(dataPath, "streams/1")));
});

t.test("a patch applies to the current options under the lock and reaches the store", async (t) => {
  const { catalog, store } = await openCatalog(t);
  await catalog.createStream("s");
  await catalog.createTopic("s", "t", options({ retentionMaxBytes: 3 * 1024 * 1024 }));
  const seen: (number | null)[] = [];
  const [first, second] = await Promise.all([
    catalog.patchTopic("s", "t", (o) => {
      seen.push(o.retentionMaxBytes);
      return { ...o, retentionMaxBytes: 5 * 1024 * 1024 };
    }),
    catalog.patchTopic("s", "t", (o) => {
      seen.push(o.retentionMaxBytes);
      return { ...o, segmentMaxAgeMs: 60_000 };
    }),
  ]);
  t.same(seen, [3 * 1024 * 1024, 5 * 1024 * 1024], "the second patch saw the first's result");
  t.equal(first.meta.options.retentionMaxBytes, 5 * 1024 * 1024);
  t.match(second.meta.options, { retentionMaxBytes: 5 * 1024 * 1024, segmentMaxAgeMs: 60_000 });
  t.same(store.doc.streams[0]!.topics[0]!.options, second.meta.options);
  t.equal(catalog.topic("s", "t").meta, second.meta, "the served topic has the new options");
});

t.test("a purge tells the shards which partitions were purged", async (t) => {
  const { catalog, host } = await openCatalog(t);
  await catalog.createStream("s");
  await catalog.createTopic("s", "t", options({ partitions: 2 }));
  await catalog.purgeTopic("s", "t");
  t.same(host.purgedLabels, ["1/1/0", "1/1/1"]);
});

t.test("reopened, the catalog serves what the store names, refuses a broken partition and sweeps orphans", async (t) => {
  const first = await openCatalog(t);
  await first.catalog.createStream("s");
  await first.catalog.createTopic("s", "t", options({ partitions: 2 }));
  await first.close();
  unlinkSync(join(first.dataPath, "streams/1/topics/1/partitions/1", superblockFileName));
  mkdirSync(join(first.dataPath, "streams/1/topics/9"), { recursive: true });
  mkdirSync(join(first.dataPath, "streams/7"), { recursive: true });

  const lines: string[] = [];
  const logger = new Logger({ level: "error", sink: (line) => lines.push(line), wallMs: () => 0 });
  const second = await openCatalog(t, first.store, first.dataPath, logger);
  const topic = second.catalog.topic("s", "t");
  t.equal(second.catalog.openPartition(topic, 0).address.partitionId, 0, "partition 0 serves");
  const refused = (() => {
    try {
      second.catalog.openPartition(topic, 1);
      return null;
    } catch (error) {
      return error;
    }
  })();
  t.ok(refused instanceof UnavailableError && refused.reason === "partition_unavailable");
  t.match((refused as Error).message, /superblock is missing/);
  const cause = (refused as Error).cause;
  t.ok(cause instanceof Error, "the error that refused the partition at boot is the refusal's cause");
  t.equal((cause as Error).message, (refused as Error).message, "and the refusal repeats its message");
  const logged = lines.map((line) => JSON.parse(line)).filter((l) => l.msg === "partition refused");
  t.equal(logged.length, 1, "the refusal is logged once");
  t.match(logged[0], {
    stream: "s",
    topic: "t",
    partition: 1,
    reason: (cause as Error).message,
    error: { name: (cause as Error).name, message: (cause as Error).message },
  }, "with its error");
  t.same([...second.host.hosted], ["1/1/0"], "only the open partition is handed to the shards");
  const table = second.catalog.incarnationTable();
  t.equal(table.get("1/1/1"), "unreadable", "the refused partition's objects are never judged garbage");
  t.match(table.get("1/1/0"), { purgeGeneration: 0, deletedUpToOffset: 0 });
  t.same(readdirSync(join(first.dataPath, "streams")), ["1"], "the orphan stream directory is gone");
  t.same(readdirSync(join(first.dataPath, "streams/1/topics")), ["1"], "so is the orphan topic directory");
});

t.test("a partition refused at boot answers 503 with its reason while the others serve", async (t) => {
  const payload = (n: number) => new Uint8Array(n).fill(7);
  const first = await openServer(t);
  const c = first.client();
  await c.createStream("s");
  await c.createTopic("s", { name: "t", partitions: 2, segment_size: "1 MiB" });
  for (let i = 0; i < 30; i++) await c.produce("s", "t", [{ payload: payload(100_000) }], 0);
  await c.produce("s", "t", [{ payload: payload(10) }], 1);
  await first.close();
  const dir = `${first.dir}/data/streams/1/topics/1/partitions/0`;
  const logs = readdirSync(dir).filter((n) => n.endsWith(".log")).sort();
  t.ok(logs.length >= 3, `${logs.length} segments written`);
  unlinkSync(`${dir}/${logs[1]}`);

  const second = await openServer(t, {}, first.dir);
  const d = second.client();
  const error = await d.poll("s", "t", 0).catch((e) => e);
  t.ok(error instanceof StrataApiError);
  t.equal(error.status, 503);
  t.equal(error.code, "partition_unavailable");
  t.match(error.message, /hole in the chain/);
  t.equal((await d.poll("s", "t", 1)).messages.length, 1, "partition 1 still serves");
  t.equal((await d.produce("s", "t", [{ payload: payload(1) }], 1)).base_offset, 1);
});

/** Another server's stream, added by a writer the store meets during a commit. */
const otherStream = (doc: Metadata) => {
  doc.streams.push({ id: doc.nextStreamId, name: "theirs", createdAtMs: 0, nextTopicId: 1, topics: [] });
  doc.nextStreamId++;
};

t.test("a store that applies a change again to a newer document: ids come from that document", async (t) => {
  const { catalog, store } = await openCatalog(t);
  await catalog.createStream("a");
  store.concurrentChange = otherStream;
  const b = await catalog.createStream("b");
  t.equal(store.changeRuns, 3, "the create ran again on the newer document");
  t.equal(b.id, 3, "the stream takes the id after the other writer's, not the one it first saw");
  t.same(store.doc.streams.map((s) => [s.id, s.name]), [[1, "a"], [2, "theirs"], [3, "b"]]);
  t.equal(store.doc.nextStreamId, 4);
  t.equal(catalog.stream("b").id, 3);

  store.concurrentChange = (doc) => {
    doc.streams[0]!.topics.push({ id: 1, name: "x", createdAtMs: 0, options: options({}) });
    doc.streams[0]!.nextTopicId = 2;
  };
  await t.rejects(
    catalog.createTopic("a", "t", options({})),
    new UnavailableError("transient", "Cannot create topic a/t: a concurrent change took topic id 1"),
    "a topic whose id was taken meanwhile is refused, since its partitions were made under that id",
  );
  t.throws(() => catalog.topic("a", "t"), ResourceNotFoundError, "nothing of it is served");
  t.match(
    await catalog.createTopic("a", "t", options({})),
    { meta: { id: 2, name: "t" } },
    "a retry takes the next id",
  );
  t.equal(store.doc.streams[0]!.nextTopicId, 3);

  store.concurrentChange = (doc) => {
    doc.streams[0]!.topics.find((x) => x.name === "t")!.options.retentionMaxBytes = 7 * 1024 * 1024;
  };
  const patched = await catalog.patchTopic("a", "t", (o) => ({ ...o, segmentMaxAgeMs: 60_000 }));
  t.match(
    patched.meta.options,
    { retentionMaxBytes: 7 * 1024 * 1024, segmentMaxAgeMs: 60_000 },
    "a patch applies to the newer options",
  );
  t.same(store.doc.streams[0]!.topics.find((x) => x.name === "t")!.options, patched.meta.options);

  store.concurrentChange = (doc) => {
    doc.streams.push({ id: doc.nextStreamId, name: "c", createdAtMs: 0, nextTopicId: 1, topics: [] });
    doc.nextStreamId++;
  };
  await t.rejects(
    catalog.createStream("c"),
    new AlreadyExistsError("Cannot create stream c: it already exists"),
    "a name the newer document has is refused",
  );
});

t.test("admin operations past the lock's wait queue are refused as overloaded, not failed", async (t) => {
  const { catalog, store } = await openCatalog(t);
  let releaseCommits = () => {};
  store.held = new Promise<void>((resolve) => releaseCommits = resolve);
  const creates = Array.from({ length: adminWaitersMax + 3 }, (_, i) => catalog.createStream(`s${i}`));
  const outcomes = creates.map((create) => create.then(() => "created", (error) => error));
  const refused = await Promise.all(outcomes.slice(adminWaitersMax + 1));
  for (const error of refused) {
    t.ok(error instanceof UnavailableError && error.reason === "overloaded", "overloaded");
    t.equal(
      error.message,
      `Cannot acquire metadata lock: the wait queue is full (${adminWaitersMax} waiters)`,
    );
    t.ok(error.cause instanceof QueueFullError, "the full queue is its cause");
  }
  store.held = null;
  releaseCommits();
  const served = await Promise.all(outcomes.slice(0, adminWaitersMax + 1));
  t.ok(served.every((o) => o === "created"), "the holder and every waiter were served");
  t.equal(store.doc.streams.length, adminWaitersMax + 1);
});

t.test("a topic's partitions are hosted a piece at a time, the event loop turning between pieces", async (t) => {
  const { catalog, host, store, dataPath, close } = await openCatalog(t);
  let counting = true;
  const turn = () => {
    host.turns.count++;
    if (counting) setImmediate(turn);
  };
  setImmediate(turn);
  t.teardown(() => {
    counting = false;
  });
  await catalog.createStream("s");
  const partitions = 4 * partitionsPerPieceMax;
  await catalog.createTopic("s", "t", options({ partitions }));
  const pieces = (turns: number[]) => {
    const sizes = new Map<number, number>();
    for (const at of turns) sizes.set(at, (sizes.get(at) ?? 0) + 1);
    return [...sizes.values()];
  };
  const created = pieces(host.hostedAtTurn);
  t.ok(created.length >= 4, `hosted over ${created.length} turns of the loop`);
  t.ok(Math.max(...created) <= partitionsPerPieceMax, `at most ${partitionsPerPieceMax} in one turn`);
  await close();
  const reopened = await openCatalog(t, store, dataPath);
  t.equal(reopened.host.hosted.size, partitions, "every partition hosted again at boot");
});
