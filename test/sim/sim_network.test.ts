import t from "tap";
import type {
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from "../../src/cluster/replication/replica_fetch.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { SimNetwork, SimNetworkError, unreachableFailMs } from "../../src/sim/sim_network.ts";
import { virtualTime, waitFor } from "../helpers/wait_for.ts";

const request: ReplicaFetchRequest = { replicaId: 2, maxWaitMs: 0, maxBytes: 1024, partitions: [] };
const answer: ReplicaFetchResponse = { error: "none", partitions: [] };

/** Runs `promise` to its end on the virtual clock, 1 ms at a time; its outcome and the time it took. */
async function drive<T>(clock: VirtualClock, promise: Promise<T>) {
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | null = null;
  promise.then((value) => (outcome = { ok: true, value }), (error) => (outcome = { ok: false, error }));
  const tookMs = await waitFor("the promise to settle", () => outcome !== null, {
    deadlineMs: 100_000,
    pace: virtualTime(clock, 1),
  });
  return { outcome: outcome!, tookMs };
}

function network(seed = 1, faults?: ConstructorParameters<typeof SimNetwork>[2]) {
  const clock = new VirtualClock();
  const net = new SimNetwork(clock, new Rng(seed), faults);
  let served = 0;
  net.serve(1, () => {
    served++;
    return Promise.resolve(answer);
  });
  return { clock, net, served: () => served };
}

t.test("a fetch reaches the leader's handler and its answer comes back, each way delayed", async (t) => {
  const { clock, net, served } = network(1, { delayMs: [5, 5], lossRate: 0, duplicateRate: 0 });
  const link = net.linkFactory(2)(1, "sim");
  const { outcome, tookMs } = await drive(clock, link.fetch(request));
  t.same(outcome, { ok: true, value: answer });
  t.equal(served(), 1);
  t.ok(tookMs >= 10 && tookMs <= 12, `there and back in ${tookMs} ms`);
  t.equal(net.inFlight, 0);
});

t.test("a node down or cut off fails after a connect timeout; the link stays broken; healed, a new one works", async (t) => {
  const { clock, net } = network();
  const factory = net.linkFactory(2);
  const down = await drive(clock, factory(3, "sim").fetch(request));
  t.ok(!down.outcome.ok && down.outcome.error instanceof SimNetworkError, "node 3 serves nothing");
  t.ok(down.tookMs >= unreachableFailMs, `failed after ${down.tookMs} ms`);
  net.setCut(1, 2, true);
  const link = factory(1, "sim");
  const cut = await drive(clock, link.fetch(request));
  t.match(cut.outcome, { ok: false, error: { message: /unreachable from node 2/ } });
  net.setCut(2, 1, false);
  t.notOk(net.isCut(1, 2), "a cut is between two nodes, either way round");
  t.match((await drive(clock, link.fetch(request))).outcome, {
    ok: false,
    error: { message: /link is closed/ },
  });
  t.same((await drive(clock, factory(1, "sim").fetch(request))).outcome, { ok: true, value: answer });
  // Another pair is not cut by it.
  net.setCut(1, 3, true);
  t.same((await drive(clock, factory(1, "sim").fetch(request))).outcome, { ok: true, value: answer });
});

t.test("losses and duplicates are drawn from the seed: the same seed gives the same run", async (t) => {
  const run = async (seed: number) => {
    const { clock, net, served } = network(seed, { delayMs: [1, 20], lossRate: 0.2, duplicateRate: 0.3 });
    const factory = net.linkFactory(2);
    const outcomes: string[] = [];
    for (let i = 0; i < 200; i++) {
      const { outcome, tookMs } = await drive(clock, factory(1, "sim").fetch(request));
      outcomes.push(`${outcome.ok ? "ok" : "lost"}@${tookMs}`);
    }
    return { outcomes, served: served() };
  };
  const a = await run(7);
  t.same(await run(7), a, "replayed exactly");
  t.notSame((await run(8)).outcomes, a.outcomes, "another seed, another run");
  const lost = a.outcomes.filter((o) => o.startsWith("lost")).length;
  // Lost on the way there (0.2) or back (0.8 × 0.2): about 36 %.
  t.ok(lost > 40 && lost < 110, `${lost} of 200 lost`);
  const delivered = 200 -
    a.outcomes.filter((o) => o.startsWith("lost") && Number(o.split("@")[1]) < 21).length;
  t.ok(
    a.served > delivered,
    `${a.served} handler calls for about ${delivered} delivered requests: duplicates`,
  );
});

t.test("a fetch the leader is handling when it goes down fails, as a reset connection does", async (t) => {
  const clock = new VirtualClock();
  const net = new SimNetwork(clock, new Rng(1));
  // A handler that never answers: the dead process's wait for an append never ends.
  net.serve(1, () => new Promise<ReplicaFetchResponse>(() => {}));
  const link = net.linkFactory(2)(1, "sim");
  const fetched = drive(clock, link.fetch(request));
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  net.serve(1, null);
  const { outcome } = await fetched;
  t.equal(outcome.ok, false);
  t.ok(!outcome.ok && outcome.error instanceof SimNetworkError, "a network error");
  t.match(!outcome.ok && String(outcome.error), /went down/);
  t.equal(net.inFlight, 0, "nothing left in flight");
});
