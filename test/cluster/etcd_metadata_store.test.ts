import t from "tap";
import { EtcdMetadataStore } from "../../src/cluster/etcd_metadata_store.ts";
import { addStream, type Metadata } from "../../src/broker/metadata/metadata.ts";
import { SimCoordinatorStore } from "../../src/coordinator/sim_coordinator.ts";
import { ConfigError } from "../../src/config/config_error.ts";
import { Logger } from "../../src/runtime/logger.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const key = "/t/metadata";

function storeOf(sim: SimCoordinatorStore, clock: VirtualClock, node: string, clusterId = "") {
  return new EtcdMetadataStore({
    coordinator: sim.client(node),
    key,
    clock,
    rng: new Rng(node.length),
    logger: new Logger({ level: "error", sink: () => {} }),
    configuredClusterId: clusterId,
  });
}

t.test("the first node writes the document; the others load it and hear every commit", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = storeOf(sim, clock, "a", "prod-1");
  const b = storeOf(sim, clock, "b");
  t.teardown(() => (a.close(), b.close()));
  await a.load();
  await b.load();
  t.equal(b.doc.clusterId, "prod-1");
  const heard: Metadata[] = [];
  b.onRemoteChange((doc) => heard.push(structuredClone(doc) as Metadata));
  await a.commit((doc) => addStream(doc, "orders", 1));
  clock.advance(1);
  await flush();
  t.same(b.doc.streams.map((s) => s.name), ["orders"]);
  t.equal(heard.length, 1);
});

t.test("two nodes committing at once both land: the loser applies its change again to the winner's document", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock, watchLagMs: 1000 });
  const a = storeOf(sim, clock, "a");
  const b = storeOf(sim, clock, "b");
  t.teardown(() => (a.close(), b.close()));
  await a.load();
  await b.load();
  let runs = 0;
  const [first, second] = await Promise.all([
    a.commit((doc) => addStream(doc, "one", 1).id),
    b.commit((doc) => (runs++, addStream(doc, "two", 2).id)),
  ]);
  t.equal(runs, 2, "b's change ran again on a's document (its watch had not told it yet)");
  t.same([first, second], [1, 2], "ids come from the document each change applied to");
  const stored = JSON.parse((await sim.client("x").range({ key })).kvs[0]!.value) as Metadata;
  t.same(stored.streams.map((s) => s.name), ["one", "two"]);
  t.equal(stored.nextStreamId, 3);
});

t.test("a node configured with another cluster id is refused at start-up, naming the key", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = storeOf(sim, clock, "a", "prod-1");
  t.teardown(() => a.close());
  await a.load();
  const error = await storeOf(sim, clock, "b", "prod-2").load().then(() => null, (e) => e);
  t.type(error, ConfigError);
  t.equal((error as ConfigError).key, "[system] cluster_id");
  t.match((error as Error).message, /prod-2, but the cluster under \/t\/metadata is prod-1/);
});

t.test("a refused change stores nothing and the next commit goes on", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimCoordinatorStore({ clock });
  const a = storeOf(sim, clock, "a");
  t.teardown(() => a.close());
  await a.load();
  await a.commit((doc) => addStream(doc, "s", 1));
  await t.rejects(a.commit((doc) => addStream(doc, "s", 2)), /already exists/);
  await a.commit((doc) => addStream(doc, "t", 3));
  t.same(a.doc.streams.map((s) => s.name), ["s", "t"]);
});
