import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { Catalog, type PartitionHost } from "../../../src/broker/catalog/catalog.ts";
import { PartitionOpener } from "../../../src/broker/catalog/partition_opener.ts";
import {
  maxMessageBytesDefault,
  segmentSizeBytesMin,
  type TopicOptions,
} from "../../../src/broker/catalog/topic_options.ts";
import { EtcdMetadataStore } from "../../../src/cluster/etcd_metadata_store.ts";
import { SimCoordinatorStore } from "../../../src/coordinator/sim_coordinator.ts";
import { loadConfig } from "../../../src/config/load_config.ts";
import { labelOf, type Partition } from "../../../src/log/partition/partition.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { virtualSteps, waitFor } from "../../helpers/wait_for.ts";

const options: TopicOptions = {
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

/** Runs `hook` once, before the first partition it opens or creates: a change arriving meanwhile. */
class HookedOpener extends PartitionOpener {
  #hook: (() => Promise<void>) | null;
  constructor(hook: (() => Promise<void>) | null, deps: ConstructorParameters<typeof PartitionOpener>[0]) {
    super(deps);
    this.#hook = hook;
  }
  override async openOrCreate(...args: Parameters<PartitionOpener["openOrCreate"]>) {
    const hook = this.#hook;
    this.#hook = null;
    await hook?.();
    return await super.openOrCreate(...args);
  }
}

class Host implements PartitionHost {
  readonly hosted = new Set<string>();
  host(partition: Partition): void {
    this.hosted.add(labelOf(partition.address));
  }
  release(partition: Partition): void {
    this.hosted.delete(labelOf(partition.address));
  }
  purged(): void {}
}

/** One server's catalog over the metadata shared through the simulated coordinator. */
async function node(t: Test, sim: SimCoordinatorStore, clock: VirtualClock, name: string) {
  return await nodeAt(t, sim, clock, name, join(tempDir(t), "data"));
}

async function nodeAt(
  t: Test,
  sim: SimCoordinatorStore,
  clock: VirtualClock,
  name: string,
  dataPath: string,
  whileOpening: ((store: EtcdMetadataStore) => Promise<void>) | null = null,
) {
  await initCrc32c();
  mkdirSync(join(dataPath, "streams"), { recursive: true });
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: dataPath });
  const disk = new NodeDisk();
  const logger = silentLogger();
  const store = new EtcdMetadataStore({
    coordinator: sim.client(name),
    key: "/c/metadata",
    clock,
    rng: new Rng(name.length),
    logger,
    configuredClusterId: "",
  });
  await store.load();
  const host = new Host();
  const catalog = await Catalog.open({
    store,
    disk,
    clock,
    logger,
    partitions: new HookedOpener(whileOpening === null ? null : () => whileOpening(store), {
      disk,
      clock,
      rng: new Rng(name.length),
      logger,
      settings: config.system,
      sharedRevisions: true,
    }),
    host,
    topicDefaults: { tiered: false, localRetentionAgeMs: null, localRetentionSizeBytes: null },
    sharedMetadata: true,
  });
  t.teardown(async () => {
    store.close();
    await catalog.close();
  });
  return { catalog, host, dataPath };
}

/**
 * Lets the watch deliver (virtual time, 1 ms a step) and the followers' disk work finish (2 ms of
 * real time after each step) until `condition` holds, for at most 10 s of real time.
 */
const following = (clock: VirtualClock) => ({ deadlineMs: 10_000, pace: virtualSteps(clock, 1, 2) });

t.test("a topic created, changed and deleted on one server is opened, changed and removed on the other", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = await node(t, sim, clock, "a");
  const b = await node(t, sim, clock, "b");
  await a.catalog.createStream("s");
  await a.catalog.createTopic("s", "orders", options);
  await waitFor("b to open the topic", () => b.catalog.findTopic("s", "orders") !== null, following(clock));
  t.same([...b.host.hosted].sort(), ["1/1/0", "1/1/1"], "b hosts the partitions it created for it");
  t.ok(existsSync(join(b.dataPath, "streams/1/topics/1/partitions/1")));
  const partition = b.catalog.openPartition(b.catalog.topic("s", "orders"), 0);
  await partition.log.append([{ key: null, payload: new TextEncoder().encode("on b"), headers: {} }]);
  t.equal(partition.log.nextOffset, 1, "b's partition takes writes");

  await a.catalog.patchTopic("s", "orders", (o) => ({ ...o, retentionMaxBytes: 1 << 30 }));
  await waitFor(
    "b to take the topic's new retention",
    () => b.catalog.topic("s", "orders").meta.options.retentionMaxBytes === 1 << 30,
    following(clock),
  );

  await a.catalog.deleteTopic("s", "orders");
  await waitFor("b to drop the topic", () => b.catalog.findTopic("s", "orders") === null, following(clock));
  await waitFor(
    "b to remove the topic's directory",
    () => !existsSync(join(b.dataPath, "streams/1/topics/1")),
    following(clock),
  );
  t.same([...b.host.hosted], [], "released");

  await a.catalog.deleteStream("s");
  await waitFor("b to drop the stream", () => b.catalog.streams().length === 0, following(clock));
});

t.test("a commit the store takes while the catalog opens its topics is followed once it has", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = await node(t, sim, clock, "a");
  await a.catalog.createStream("s");
  await a.catalog.createTopic("s", "early", options);
  // b opens "early"; while it does, a creates "late" and b's store takes it, before b's catalog
  // listens for changes.
  const b = await nodeAt(t, sim, clock, "b", join(tempDir(t), "data"), async (store) => {
    await a.catalog.createTopic("s", "late", options);
    await waitFor(
      'b\'s store to take the topic "late"',
      () => store.doc.streams.some((s) => s.topics.some((topic) => topic.name === "late")),
      following(clock),
    );
  });
  await waitFor(
    "b to open the topic it heard of late",
    () => b.catalog.findTopic("s", "late") !== null,
    following(clock),
  );
  t.same(
    [...b.host.hosted].sort(),
    ["1/1/0", "1/1/1", "1/2/0", "1/2/1"],
    "b hosts the topic it heard of late",
  );
});

t.test("topics created on both servers at once both exist on both, each under its own id", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = await node(t, sim, clock, "a");
  const b = await node(t, sim, clock, "b");
  await a.catalog.createStream("s");
  await waitFor("b to open the stream", () => b.catalog.streams().length === 1, following(clock));
  const results = await Promise.allSettled([
    a.catalog.createTopic("s", "x", options),
    b.catalog.createTopic("s", "y", options),
  ]);
  // Both took topic id 1 from the document they read; the second to commit is refused, typed, and
  // leaves nothing behind; its retry takes the next id.
  const refused = results.filter((r) => r.status === "rejected");
  t.ok(refused.length <= 1);
  if (refused.length === 1) {
    const loser = results[0]!.status === "rejected" ? a : b;
    await waitFor(
      "the refused node to see the other's topic",
      () => loser.catalog.findTopic("s", results[0]!.status === "rejected" ? "y" : "x") !== null,
      following(clock),
    );
    await loser.catalog.createTopic("s", results[0]!.status === "rejected" ? "x" : "y", options);
  }
  await waitFor(
    "both topics on both nodes",
    () => ["x", "y"].every((n) => a.catalog.findTopic("s", n) && b.catalog.findTopic("s", n)),
    following(clock),
  );
  const ids = (c: Catalog) => ["x", "y"].map((n) => c.topic("s", n).meta.id);
  t.same(ids(a.catalog), ids(b.catalog));
  t.not(ids(a.catalog)[0], ids(a.catalog)[1]);
});

t.test("a server that was down while a topic was created creates its partitions when it boots", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = await node(t, sim, clock, "a");
  await a.catalog.createStream("s");
  await a.catalog.createTopic("s", "late", options);
  const b = await nodeAt(t, sim, clock, "b", join(tempDir(t), "fresh"));
  t.same([...b.host.hosted].sort(), ["1/1/0", "1/1/1"], "opened, not refused");
  t.equal(b.catalog.topic("s", "late").slots.every((s) => s.kind === "open"), true);
});

t.test("every node derives the same created revision for a partition, so its objects have one set of keys", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  // Different random generators: a revision drawn from them would differ.
  const a = await node(t, sim, clock, "a");
  const b = await node(t, sim, clock, "bb");
  await a.catalog.createStream("s");
  await a.catalog.createTopic("s", "orders", options);
  await waitFor("b to open the topic", () => b.catalog.findTopic("s", "orders") !== null, following(clock));
  const revisions = (n: typeof a) =>
    [0, 1].map((p) => n.catalog.openPartition(n.catalog.topic("s", "orders"), p).superblock.createdRevision);
  t.same(revisions(b), revisions(a), "the same on both nodes");
  t.not(revisions(a)[0], revisions(a)[1], "and another for each partition");
  t.match(revisions(a)[0], /^[0-9a-f]{16}$/);
  // Deleted and created again: a new incarnation, with new keys.
  const before = revisions(a);
  await a.catalog.deleteTopic("s", "orders");
  clock.advance(5);
  await a.catalog.createTopic("s", "orders", options);
  await waitFor(
    "b to open the topic created again",
    () => b.catalog.findTopic("s", "orders")?.meta.id === 2,
    following(clock),
  );
  t.not(revisions(a)[0], before[0], "recreated: another revision");
  t.same(revisions(b), revisions(a), "the same on both nodes again");
});
