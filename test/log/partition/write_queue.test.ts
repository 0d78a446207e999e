import t from "tap";
import { groupOpsMax } from "../../../src/log/log_config.ts";
import { PartitionUnavailableError, WriteQueueFullError } from "../../../src/log/log_errors.ts";
import { type Deferred, type GroupCommit, WriteQueue } from "../../../src/log/partition/write_queue.ts";

type Op = { kind: "put" | "other"; value: number; done: Deferred<number> };

/** A group commit that writes to an event list: apply, flush, sync, publish and acks, in order. */
function recordingCommit(options: { failOn?: number; syncDue?: boolean } = {}) {
  const events: string[] = [];
  const stops: Error[] = [];
  const groups: number[] = [];
  let inGroup = 0;
  const commit: GroupCommit<Op> = {
    apply: (op) => {
      events.push(`apply ${op.value}`);
      inGroup++;
      if (op.value === options.failOn) return Promise.reject(new Error("the disk is full"));
      return Promise.resolve(() => {
        events.push(`ack ${op.value}`);
        op.done.resolve(op.value);
      });
    },
    flush: () => {
      events.push("flush");
      groups.push(inGroup);
      inGroup = 0;
      return Promise.resolve();
    },
    syncDue: () => options.syncDue ?? true,
    sync: () => {
      events.push("sync");
      return Promise.resolve();
    },
    publish: () => events.push("publish"),
    stopped: (error) => stops.push(error),
  };
  return { commit, events, groups, stops };
}

const put = (queue: WriteQueue<Op>, value: number, kind: Op["kind"] = "put") =>
  queue.enqueue<number>((done) => ({ kind, value, done }));

t.test("a group's operations run in order, then one flush, one fsync and one publish, then the acks", async (t) => {
  const { commit, events } = recordingCommit();
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  const results = await Promise.all([put(queue, 1), put(queue, 2), put(queue, 3)]);
  t.same(results, [1, 2, 3]);
  t.same(events, [
    "apply 1",
    "flush",
    "sync",
    "publish",
    "ack 1",
    "apply 2",
    "apply 3",
    "flush",
    "sync",
    "publish",
    "ack 2",
    "ack 3",
  ], "the first starts the writer alone; the two queued behind it make one group");
});

t.test("no fsync when the policy does not ask for one", async (t) => {
  const { commit, events } = recordingCommit({ syncDue: false });
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  await put(queue, 1);
  t.notOk(events.includes("sync"));
});

t.test("a group takes at most groupOpsMax operations", async (t) => {
  const { commit, groups } = recordingCommit();
  const queue = new WriteQueue<Op>("p", () => 1000, commit);
  await Promise.all(Array.from({ length: 300 }, (_, i) => put(queue, i)));
  t.same(groups, [1, groupOpsMax, 300 - 1 - groupOpsMax]);
});

t.test("the queue is bounded; the bound is read at each enqueue", async (t) => {
  const { commit } = recordingCommit();
  let queueMax = 2;
  const queue = new WriteQueue<Op>("p", () => queueMax, commit);
  const first = put(queue, 1);
  const queued = [put(queue, 2), put(queue, 3)];
  await t.rejects(put(queue, 4), WriteQueueFullError);
  queueMax = 3;
  const more = put(queue, 5);
  t.same(await Promise.all([first, ...queued, more]), [1, 2, 3, 5]);
});

t.test("a failed operation fails its group and everything queued; later operations are refused", async (t) => {
  const { commit, events, stops } = recordingCommit({ failOn: 2 });
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  const results = await Promise.allSettled([put(queue, 1), put(queue, 2), put(queue, 3)]);
  t.same(results.map((r) => r.status), ["fulfilled", "rejected", "rejected"]);
  const failed = results[1] as PromiseRejectedResult;
  t.ok(failed.reason instanceof PartitionUnavailableError);
  t.match(failed.reason.message, /write failed: the disk is full/);
  t.equal(failed.reason.cause, queue.failure, "the failure is the refusal's cause");
  t.notOk(events.includes("ack 3"), "nothing of the failed group is acknowledged");
  t.match(queue.failure?.message, /the disk is full/);
  const later = await put(queue, 4).catch((error: unknown) => error);
  t.match((later as Error).message, /an earlier write failed/);
  t.equal((later as Error).cause, queue.failure, "a later refusal keeps the same cause");
  t.same(stops, [queue.failure], "the commit hears of the stop once");
});

t.test("a failure from outside the loop (the background fsync) refuses later operations; the first is kept", async (t) => {
  const { commit, stops } = recordingCommit();
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  const fsyncFailure = new Error("fsync failed");
  queue.fail(fsyncFailure);
  queue.fail(new Error("a later one"));
  const refused = await put(queue, 1).catch((error: unknown) => error);
  t.match((refused as Error).message, /an earlier write failed \(fsync failed\)/);
  t.equal((refused as Error).cause, fsyncFailure, "the first failure is the cause");
  t.same(stops, [fsyncFailure], "the commit hears of the stop once, with the first failure");
});

t.test("a failure from outside the loop while operations wait refuses them once the running group ends", async (t) => {
  const { commit, events } = recordingCommit();
  let releaseFlush = () => {};
  const flushed = new Promise<void>((resolve) => (releaseFlush = resolve));
  const flush = commit.flush;
  commit.flush = async () => {
    await flushed;
    await flush();
  };
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  const first = put(queue, 1);
  // The writer has taken the first into its group and waits in the flush; these two wait behind it.
  const waiting = [put(queue, 2), put(queue, 3)].map((p) => p.catch((error: unknown) => error));
  const fsyncFailure = new Error("fsync failed");
  queue.fail(fsyncFailure);
  releaseFlush();
  t.equal(await first, 1, "the group under way when the failure came is written and acknowledged");
  for (const refused of await Promise.all(waiting)) {
    t.ok(refused instanceof PartitionUnavailableError, "a waiting operation is refused");
    t.match((refused as Error).message, /an earlier write failed \(fsync failed\)/);
    t.equal((refused as Error).cause, fsyncFailure, "with the failure as its cause");
  }
  t.notOk(events.includes("apply 2"), "nothing queued after the failure is written");
});

t.test("close refuses later operations and hands back the running writer", async (t) => {
  const { commit } = recordingCommit();
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  t.equal(queue.close(), null, "nothing runs");
  const open = new WriteQueue<Op>("p", () => 100, commit);
  const pending = [put(open, 1), put(open, 2)];
  const running = open.close();
  t.ok(running !== null, "the writer is running");
  await running;
  t.same(await Promise.all(pending), [1, 2], "what was queued before the close is written");
  await t.rejects(put(open, 3), /the log is closed/);
  t.ok(open.closed);
});

t.test("has tells whether an operation of a kind is queued and not yet taken", async (t) => {
  const { commit } = recordingCommit();
  const queue = new WriteQueue<Op>("p", () => 100, commit);
  const first = put(queue, 1);
  t.notOk(queue.has("other"), "the first was taken at once");
  const other = put(queue, 2, "other");
  t.ok(queue.has("other"));
  await Promise.all([first, other]);
  t.notOk(queue.has("other"));
});
