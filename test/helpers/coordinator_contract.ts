import type { Test } from "tap";
import type { Coordinator, WatchEvent } from "../../src/coordinator/coordinator.ts";
import { CoordinatorRequestError, LeaseNotFoundError } from "../../src/coordinator/coordinator_errors.ts";
import { waitFor, type WaitPace } from "./wait_for.ts";

/** What the contract needs besides the coordinator: the pace its waits step by, on the coordinator's clock. */
export interface ContractEnv {
  coordinator: Coordinator;
  /** Real time for a real etcd, virtual time for the simulated one; the contract's deadlines are on its clock. */
  pace: WaitPace;
}

async function errorOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
    return null;
  } catch (error) {
    return error;
  }
}

/** Collects a watch's events and how it ended. */
function recorder() {
  const events: WatchEvent[] = [];
  let ended: Error | null | undefined = undefined;
  return {
    events,
    get ended() {
      return ended;
    },
    listener: {
      events: (batch: readonly WatchEvent[]) => events.push(...batch),
      ended: (error: Error | null) => {
        ended = error;
      },
    },
  };
}

/**
 * The behaviour every `Coordinator` shows, run against etcd and the simulated one alike. `prefix`
 * isolates this run's keys.
 */
export function coordinatorContract(t: Test, env: ContractEnv, prefix: string) {
  const c = env.coordinator;
  const k = (name: string) => `${prefix}/${name}`;

  t.test("a create-if-absent transaction wins once; the loser reads the winner", async (t) => {
    const absent = [{ key: k("ctl"), target: "createRevision" as const, result: "equal" as const, value: 0 }];
    const first = await c.txn({
      compare: absent,
      success: [{ kind: "put", key: k("ctl"), value: "node-1" }],
      failure: [{ kind: "range", key: k("ctl") }],
    });
    t.equal(first.succeeded, true);
    const second = await c.txn({
      compare: absent,
      success: [{ kind: "put", key: k("ctl"), value: "node-2" }],
      failure: [{ kind: "range", key: k("ctl") }],
    });
    t.equal(second.succeeded, false);
    const read = second.responses[0];
    t.equal(read?.kind, "range");
    if (read?.kind !== "range") return;
    t.equal(read.kvs.length, 1);
    t.equal(read.kvs[0]!.value, "node-1");
    t.equal(read.kvs[0]!.createRevision, first.revision, "the epoch is the create revision");
    t.equal(second.revision, first.revision, "a transaction that writes nothing keeps the revision");
  });

  t.test("mod revision compares serialize writers; versions and create revisions behave as etcd's", async (t) => {
    const created = await c.txn({ compare: [], success: [{ kind: "put", key: k("doc"), value: '{"v":1}' }] });
    const swap = (expected: number, value: string) =>
      c.txn({
        compare: [{ key: k("doc"), target: "modRevision", result: "equal", value: expected }],
        success: [{ kind: "put", key: k("doc"), value }],
      });
    const won = await swap(created.revision, '{"v":2}');
    t.equal(won.succeeded, true);
    t.ok(won.revision > created.revision, "every write raises the revision");
    const lost = await swap(created.revision, '{"v":3}');
    t.equal(lost.succeeded, false, "a stale revision loses");
    const { kvs, revision } = await c.range({ key: k("doc") });
    t.equal(kvs[0]?.value, '{"v":2}');
    t.equal(kvs[0]?.version, 2);
    t.equal(kvs[0]?.createRevision, created.revision);
    t.equal(kvs[0]?.modRevision, won.revision);
    t.ok(revision >= won.revision);
    const byValue = await c.txn({
      compare: [{ key: k("doc"), target: "value", result: "equal", value: '{"v":2}' }],
      success: [{ kind: "put", key: k("doc"), value: "ünïcode ✓" }],
    });
    t.equal(byValue.succeeded, true);
    t.equal((await c.range({ key: k("doc") })).kvs[0]?.value, "ünïcode ✓", "text survives the trip");
    const missing = await c.txn({
      compare: [{ key: k("nothing"), target: "value", result: "notEqual", value: "x" }],
      success: [{ kind: "put", key: k("nothing"), value: "x" }],
    });
    t.equal(missing.succeeded, false, "a value compare on a missing key fails");
  });

  t.test("a prefix range reads in key order and a prefix delete counts what it deleted", async (t) => {
    const names = ["b", "a", "c/x", "c/y"];
    await c.txn({
      compare: [],
      success: names.map((n) => ({ kind: "put" as const, key: k(`list/${n}`), value: n })),
    });
    await c.txn({ compare: [], success: [{ kind: "put", key: k("listing"), value: "outside" }] });
    const { kvs } = await c.range({ key: k("list/"), prefix: true });
    t.same(kvs.map((kv) => kv.value), ["a", "b", "c/x", "c/y"]);
    const gone = await c.txn({ compare: [], success: [{ kind: "delete", key: k("list/c/"), prefix: true }] });
    t.same(gone.responses, [{ kind: "delete", deleted: 2 }]);
    t.same((await c.range({ key: k("list/"), prefix: true })).kvs.map((kv) => kv.value), ["a", "b"]);
    t.equal((await c.range({ key: k("listing") })).kvs.length, 1, "a key beside the prefix stays");
  });

  t.test("a transaction of more operations than etcd allows is refused as a request error", async (t) => {
    const ops = Array.from(
      { length: 129 },
      (_, i) => ({ kind: "put" as const, key: k(`many/${i}`), value: "x" }),
    );
    t.type(await errorOf(c.txn({ compare: [], success: ops })), CoordinatorRequestError);
    t.equal((await c.range({ key: k("many/"), prefix: true })).kvs.length, 0);
  });

  t.test("a lease binds keys: revoking it deletes them; it cannot be kept alive after", async (t) => {
    const lease = await c.leaseGrant(5000);
    t.equal(lease.ttlMs, 5000);
    await c.txn({ compare: [], success: [{ kind: "put", key: k("node/1"), value: "up", lease: lease.id }] });
    t.equal((await c.range({ key: k("node/1") })).kvs[0]?.lease, lease.id);
    t.equal((await c.leaseKeepAlive(lease.id)).ttlMs, 5000);
    await c.leaseRevoke(lease.id);
    t.equal((await c.range({ key: k("node/1") })).kvs.length, 0, "the bound key is gone");
    t.type(await errorOf(c.leaseKeepAlive(lease.id)), LeaseNotFoundError);
    await c.leaseRevoke(lease.id);
    const put = c.txn({
      compare: [],
      success: [{ kind: "put", key: k("node/1"), value: "up", lease: lease.id }],
    });
    t.type(await errorOf(put), LeaseNotFoundError, "a write bound to a gone lease is refused");
  });

  t.test("a lease not kept alive expires with its keys after its TTL", async (t) => {
    const lease = await c.leaseGrant(1000);
    await c.txn({ compare: [], success: [{ kind: "put", key: k("node/2"), value: "up", lease: lease.id }] });
    await waitFor(
      "the lease's key to expire",
      async () => (await c.range({ key: k("node/2") })).kvs.length === 0,
      { deadlineMs: 10_000, pace: env.pace },
    );
    t.type(await errorOf(c.leaseKeepAlive(lease.id)), LeaseNotFoundError);
  });

  t.test("a watch from a past revision hears every later change once, in order", async (t) => {
    const first = await c.txn({ compare: [], success: [{ kind: "put", key: k("w/a"), value: "1" }] });
    await c.txn({
      compare: [],
      success: [{ kind: "put", key: k("w/b"), value: "2" }, { kind: "put", key: k("w/c"), value: "3" }],
    });
    await c.txn({ compare: [], success: [{ kind: "put", key: k("wx"), value: "outside" }] });
    const seen = recorder();
    const watch = c.watch({ key: k("w/"), prefix: true }, first.revision, seen.listener);
    await waitFor("the past events", () => seen.events.length >= 3, { deadlineMs: 5000, pace: env.pace });
    await c.txn({ compare: [], success: [{ kind: "delete", key: k("w/a") }] });
    await waitFor("the delete", () => seen.events.length >= 4, { deadlineMs: 5000, pace: env.pace });
    watch.close();
    await waitFor("the watch to end", () => seen.ended !== undefined, { deadlineMs: 5000, pace: env.pace });
    t.equal(seen.ended, null, "closed, not failed");
    t.same(seen.events.map((e) => `${e.kind} ${e.kv.key.slice(prefix.length)} ${e.kv.value}`), [
      "put /w/a 1",
      "put /w/b 2",
      "put /w/c 3",
      "delete /w/a ",
    ]);
    t.equal(seen.events[1]!.kv.modRevision, seen.events[2]!.kv.modRevision, "one transaction, one revision");
    const revisions = seen.events.map((e) => e.kv.modRevision);
    t.same(revisions, [...revisions].sort((a, b) => a - b));
  });

  t.test("a watch from now hears only what comes after it", async (t) => {
    await c.txn({ compare: [], success: [{ kind: "put", key: k("now/old"), value: "old" }] });
    const seen = recorder();
    const watch = c.watch({ key: k("now/"), prefix: true }, 0, seen.listener);
    // The watch is in place once a write made after it is heard; writes go on until one is.
    let n = 0;
    await waitFor("a write after the watch", async () => {
      await c.txn({ compare: [], success: [{ kind: "put", key: k(`now/new${n++}`), value: "new" }] });
      return seen.events.length > 0;
    }, { deadlineMs: 5000, pace: env.pace });
    watch.close();
    t.notOk(seen.events.some((e) => e.kv.value === "old"));
  });
}
