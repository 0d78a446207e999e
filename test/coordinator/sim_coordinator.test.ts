import t from "tap";
import { SimCoordinatorStore } from "../../src/coordinator/sim_coordinator.ts";
import { CompactedError, CoordinatorUnavailableError } from "../../src/coordinator/coordinator_errors.ts";
import type { WatchEvent } from "../../src/coordinator/coordinator.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { coordinatorContract } from "../helpers/coordinator_contract.ts";
import { virtualTime } from "../helpers/wait_for.ts";

t.test("the simulated coordinator keeps the contract", (t) => {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock });
  coordinatorContract(t, { coordinator: store.client("node-1"), pace: virtualTime(clock, 50) }, "/contract");
  t.end();
});

t.test("a lease expires exactly when the virtual clock passes its TTL, and not before", async (t) => {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock, leaseTtlMinMs: 1500 });
  const c = store.client("a");
  const lease = await c.leaseGrant(1000);
  t.equal(lease.ttlMs, 2000, "raised to the minimum, in whole seconds");
  await c.txn({ compare: [], success: [{ kind: "put", key: "k", value: "v", lease: lease.id }] });
  clock.advance(1999);
  t.equal((await c.range({ key: "k" })).kvs.length, 1);
  await c.leaseKeepAlive(lease.id);
  clock.advance(1999);
  t.equal((await c.range({ key: "k" })).kvs.length, 1, "the keepalive moved the deadline");
  clock.advance(1);
  t.equal((await c.range({ key: "k" })).kvs.length, 0);
  t.same(store.leaseIds(), []);
});

t.test("a client cut off fails every call and hears nothing until healed; then it hears all", async (t) => {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock, watchLagMs: 5 });
  const a = store.client("a");
  const b = store.client("b");
  const heard: WatchEvent[] = [];
  b.watch({ key: "x/", prefix: true }, 0, { events: (e) => heard.push(...e), ended: () => {} });
  store.setReachable("b", false);
  const refused = await b.range({ key: "x/1" }).then(() => null, (e) => e);
  t.type(refused, CoordinatorUnavailableError);
  t.equal((refused as CoordinatorUnavailableError).ambiguous, false);
  await a.txn({ compare: [], success: [{ kind: "put", key: "x/1", value: "1" }] });
  clock.advance(100);
  t.equal(heard.length, 0, "a cut-off watch hears nothing");
  store.setReachable("b", true);
  clock.advance(4);
  t.equal(heard.length, 0, "watchers hear after the lag");
  clock.advance(1);
  t.same(heard.map((e) => e.kv.value), ["1"]);
});

t.test("a watch from a revision the history no longer holds ends with CompactedError", async (t) => {
  const clock = new VirtualClock();
  const store = new SimCoordinatorStore({ clock, historyEventsMax: 2 });
  const c = store.client("a");
  const first = await c.txn({ compare: [], success: [{ kind: "put", key: "k", value: "1" }] });
  for (let i = 2; i <= 4; i++) {
    await c.txn({ compare: [], success: [{ kind: "put", key: "k", value: String(i) }] });
  }
  let ended: Error | null | undefined;
  c.watch({ key: "k" }, first.revision, { events: () => {}, ended: (e) => (ended = e) });
  clock.advance(0);
  t.type(ended, CompactedError);
  t.equal((ended as CompactedError).compactRevision, first.revision + 1);
});

t.test("the same calls at the same virtual times give the same revisions and lease ids", async (t) => {
  const run = async () => {
    const clock = new VirtualClock();
    const store = new SimCoordinatorStore({ clock });
    const c = store.client("a");
    const out: string[] = [];
    for (let i = 0; i < 20; i++) {
      const lease = await c.leaseGrant(1000 + (i % 3) * 1000);
      const r = await c.txn({
        compare: [],
        success: [{ kind: "put", key: `n/${i % 4}`, value: "v", lease: lease.id }],
      });
      clock.advance(700);
      out.push(`${lease.id}@${r.revision}:${(await c.range({ key: "n/", prefix: true })).kvs.length}`);
    }
    return out.join(",");
  };
  t.equal(await run(), await run());
});
