import t from "tap";
import { EtcdCoordinator } from "../../../src/coordinator/etcd/etcd_coordinator.ts";
import { CompactedError, CoordinatorUnavailableError } from "../../../src/coordinator/coordinator_errors.ts";
import type { WatchEvent } from "../../../src/coordinator/coordinator.ts";
import { RealClock } from "../../../src/runtime/clock/real_clock.ts";
import { coordinatorContract } from "../../helpers/coordinator_contract.ts";
import { etcdUnavailableReason, startEtcd } from "../../helpers/harnesses/etcd_harness.ts";
import { realTime, waitFor } from "../../helpers/wait_for.ts";

const unavailable = etcdUnavailableReason();
const clock = new RealClock();

/** The waits of these tests: real time, checked every 50 ms. */
const pace = realTime(50);
const coordinatorOf = (endpoints: string[], requestTimeoutMs = 2000) =>
  new EtcdCoordinator({ endpoints, fetch: (url, init) => fetch(url, init), clock, requestTimeoutMs });

t.test("etcd through its JSON gateway", { skip: unavailable ?? false, timeout: 120_000 }, (t) => {
  const etcd = startEtcd(t, 26_790);

  t.test("keeps the coordinator contract", (t) => {
    const c = coordinatorOf(etcd.endpoints);
    t.teardown(() => c.close());
    coordinatorContract(t, { coordinator: c, pace }, `/contract-${process.pid}`);
    t.end();
  });

  t.test("a watch from a compacted revision ends with CompactedError", async (t) => {
    const c = coordinatorOf(etcd.endpoints);
    t.teardown(() => c.close());
    const first = await c.txn({ compare: [], success: [{ kind: "put", key: "/compact/k", value: "1" }] });
    const last = await c.txn({ compare: [], success: [{ kind: "put", key: "/compact/k", value: "2" }] });
    await fetch(`${etcd.endpoints[0]}/v3/kv/compaction`, {
      method: "POST",
      body: JSON.stringify({ revision: String(last.revision) }),
    }).then((r) => r.text());
    let ended: Error | null | undefined;
    c.watch({ key: "/compact/k" }, first.revision, { events: () => {}, ended: (e) => (ended = e) });
    await waitFor("the watch to end", () => ended !== undefined, { deadlineMs: 5000, pace });
    t.type(ended, CompactedError);
  });

  t.test("with one member killed, requests and watches move to the others and lose no event", async (t) => {
    const c = coordinatorOf(etcd.endpoints);
    t.teardown(() => c.close());
    const heard: WatchEvent[] = [];
    let ended: Error | null | undefined;
    c.watch({ key: "/failover/", prefix: true }, 0, {
      events: (e) => heard.push(...e),
      ended: (e) => (ended = e),
    });
    let n = 0;
    const put = () =>
      c.txn({ compare: [], success: [{ kind: "put", key: `/failover/${n}`, value: String(n++) }] });
    await waitFor("the watch to hear a write", async () => (await put(), heard.length > 0), {
      deadlineMs: 5000,
      pace,
    });
    // The client talks to the first member first: killing it forces both paths to move on.
    etcd.kill(1);
    const writes = 20;
    for (let i = 0; i < writes; i++) {
      try {
        await put();
      } catch (error) {
        // A write in flight when its member died is ambiguous, never silently lost: re-read decides.
        t.type(error, CoordinatorUnavailableError);
        t.equal((error as CoordinatorUnavailableError).ambiguous, true);
      }
    }
    const stored = (await c.range({ key: "/failover/", prefix: true })).kvs;
    await waitFor("the watch to hear every stored write", () => heard.length >= stored.length, {
      deadlineMs: 10_000,
      pace,
    });
    t.same(heard.map((e) => e.kv.key).sort(), stored.map((kv) => kv.key).sort(), "each write heard once");
    t.equal(ended, undefined, "the watch went on");
    etcd.restart(1);
  });

  t.test("with no member reachable, a call fails as unavailable within its deadline", async (t) => {
    const c = coordinatorOf(["http://127.0.0.1:26701", "http://127.0.0.1:26702"], 500);
    t.teardown(() => c.close());
    const startedMs = clock.nowMs();
    const error = await c.range({ key: "x" }).then(() => null, (e) => e);
    t.type(error, CoordinatorUnavailableError);
    t.equal(
      (error as CoordinatorUnavailableError).ambiguous,
      false,
      "refused connections never reached etcd",
    );
    t.match((error as Error).message, /no etcd member answered/);
    t.ok(clock.nowMs() - startedMs < 2000);
    const txn = await c.txn({ compare: [], success: [{ kind: "put", key: "x", value: "y" }] }).then(
      () => null,
      (e) => e,
    );
    t.equal((txn as CoordinatorUnavailableError).ambiguous, false);
  });
  t.end();
});
