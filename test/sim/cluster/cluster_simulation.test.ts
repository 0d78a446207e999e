import t from "tap";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { clusterScenarios, swarmEvents, swarmOf } from "../../../src/sim/cluster/cluster_scenarios.ts";
import { runClusterSimulation } from "../../../src/sim/cluster/cluster_simulation.ts";

await initCrc32c();

/** The swarm's events before it drew the topic's re-creation too (the last kind). */
const eventsBefore = swarmEvents.slice(0, -1);
/** The swarm as it was when the runs below found their bugs: fixed faults, then faults drawn. */
const lanSwarm = swarmOf("swarm", eventsBefore, {
  network: { delayMs: [0, 5], lossRate: 0.01, duplicateRate: 0.01 },
  watchLagMs: 5,
});
const drawnSwarm = swarmOf("swarm", eventsBefore, { draw: clusterScenarios["swarm"]!.draw! });

t.test("every cluster scenario holds its invariants on a fixed set of seeds", async (t) => {
  let merged = 0;
  for (const scenario of Object.values(clusterScenarios)) {
    for (const seed of [1, 2]) {
      const r = await runClusterSimulation({ seed, scenario, steps: 1000 });
      merged += r.mergedObjects;
      t.ok(r.ok, `${scenario.name} seed ${seed}: ${r.violation ?? "ok"}`) ||
        t.comment(r.trail.filter((l) => !l.includes(" ack ")).slice(-40).join("\n"));
      t.ok(r.acknowledged > 100, `${scenario.name} seed ${seed}: ${r.acknowledged} acknowledged`);
      t.ok(r.floor > 0, `${scenario.name} seed ${seed}: the floor reached ${r.floor}`);
    }
  }
  // Segments roll by age: leaders merge them, under the scenarios' faults.
  t.ok(merged > 0, `${merged} merged objects over the runs`);
});

t.test("the scenarios' events strike: crashes, wipes, a refused purge, a dead topic, a replaced zombie", async (t) => {
  const run = (name: string) =>
    runClusterSimulation({ seed: 1, scenario: clusterScenarios[name]!, steps: 1000 });
  t.ok(
    (await run("leader_crash_mid_upload")).counts.crashesMidUpload > 0,
    "the leader crashed with an upload in flight",
  );
  t.ok((await run("replica_rebuilt")).counts.wipes > 0, "a follower was wiped");
  t.ok(
    (await run("purge_during_leader_change")).counts.purgesRefused > 0,
    "the purge was asked for, and refused",
  );
  const recreated = (await run("topic_recreated")).counts;
  t.ok(recreated.topicsRecreated > 0 && recreated.deadTopicObjects > 0, "the dead topic left objects for GC");
  t.ok((await run("zombie_leader")).counts.leaderChanges >= 2, "the isolated leader was replaced");
});

t.test("a leader that restarts before its partitions move does not lead its old epoch again (seed 3)", async (t) => {
  // The run that found it: all three nodes crashed; the leader came back first, still named by the
  // stored state, and served that epoch again with its high watermark back at 0.
  const r = await runClusterSimulation({ seed: 3, scenario: lanSwarm, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
  t.ok(r.crashes >= 3, `${r.crashes} crashes`);
});

t.test("a deposed leader's own segment end is not kept by it as a follower (seed 6)", async (t) => {
  // The run that found it: a leader rolled a segment and was deposed before a record followed; as a
  // follower of the next leader its sealed segment ended where no other replica's did.
  const r = await runClusterSimulation({ seed: 6, scenario: lanSwarm, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("a node whose data directory was wiped is not elected on records it lost (seed 18)", async (t) => {
  // The run that found it: the leader isolated, one follower crashed, the other wiped; the wiped one
  // came back first, was still listed in sync, was elected, and offsets acknowledged before were
  // acknowledged again with new values.
  const r = await runClusterSimulation({ seed: 18, scenario: lanSwarm, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
  t.ok(r.counts.wipes > 0, `${r.counts.wipes} data directories wiped`);
});

t.test("a restarted leader is not laundered back into its old epoch by another node's write (swarm seed 111)", async (t) => {
  // The run that found it: the leader crashed and came back; a wiped follower then left the in-sync
  // set, a write after the returned leader's registration, and the returned leader led its old
  // epoch again from that state. The epoch is now bound to the registration it was given to.
  const r = await runClusterSimulation({ seed: 111, scenario: drawnSwarm, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("two wiped replicas: the one that left the in-sync set below the minimum is elected (swarm seed 1036)", async (t) => {
  // The run that found it: two followers wiped in turn, the leader isolated; the in-sync set shrank
  // to a replica that was then wiped, and it was elected, though the isolated old leader held every
  // acknowledged record. Replicas that leave the set below min_insync_replicas stay eligible.
  const r = await runClusterSimulation({ seed: 1036, scenario: drawnSwarm, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("an eligible replica elected never lacks a committed record (swarm seed 1080)", async (t) => {
  // The run that found it: the leader, alone in sync below the minimum, went on committing and
  // uploading; an eligible replica was elected without those records, and the old leader could not
  // cut its diverged tail out of segments already in the bucket. The watermark now waits for the
  // minimum.
  const r = await runClusterSimulation({ seed: 1080, scenario: drawnSwarm, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("a wiped node that races a state change while leaving the in-sync sets does not register yet (swarm seed 23)", async (t) => {
  // The run that found it: two followers wiped; the write taking one out of the eligible set lost
  // a race with the controller, the node registered anyway, and was elected on records it lost.
  const r = await runClusterSimulation({ seed: 23, scenario: clusterScenarios["swarm"]!, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("a topic naming 3 replicas waits for 3 live nodes to be placed (swarm seed 101)", async (t) => {
  // The run that found it: the topic was created again while a crashed node's lease still showed
  // it live; the controller, seeing two, placed it on two replicas.
  const r = await runClusterSimulation({ seed: 101, scenario: clusterScenarios["swarm"]!, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("a follower's fetch from a diverged log is not progress: the watermark waits for its real records (seeds 263, 210)", async (t) => {
  // The runs that found it: a follower holding an old epoch's record at 57 fetched from 58; the
  // new leader counted 58 as the follower's progress before answering that its log diverged, so
  // the high watermark passed 57 with the leader alone holding it. The leader crashed: the record,
  // acknowledged, was lost (263); a segment was uploaded that the replicas did not hold (210).
  for (const seed of [263, 210]) {
    const r = await runClusterSimulation({ seed, scenario: clusterScenarios["swarm"]!, steps: 1000 });
    t.ok(r.ok, `seed ${seed}: ${r.violation ?? "ok"}`) ||
      t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
  }
});

t.test("a node starting while its topic is deleted and created again hosts the new one (swarm seed 593)", async (t) => {
  // The run that found it: a wiped node's start (a state transfer) outlasted the topic's deletion
  // and creation again; its store took both commits before its catalog listened, and the node,
  // elected leader of the new partition, never hosted it.
  const r = await runClusterSimulation({ seed: 593, scenario: clusterScenarios["swarm"]!, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("no floor is checked while the topic is deleted and made again (topic_recreated seed 3)", async (t) => {
  // The run that found it: a step ran while the deletion was under way, with no partition; the
  // check read the new topic's floor (none, 0) against the old life's, as if the floor went back.
  const r = await runClusterSimulation({
    seed: 3,
    scenario: clusterScenarios["topic_recreated"]!,
    steps: 1000,
  });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
  t.equal(r.counts.topicsRecreated, 1, "the topic was made again");
});

t.test("the read-back waits for every produce in flight to be answered (swarm seed 201)", async (t) => {
  // The run that found it: the idempotent producer's batch, acknowledged after the read-back had
  // read up to the high watermark, was missing from what the read-back held.
  const r = await runClusterSimulation({ seed: 201, scenario: clusterScenarios["swarm"]!, steps: 1000 });
  t.ok(r.ok, r.violation ?? "ok") || t.comment(r.trail.filter((l) => !l.includes(" ack ")).join("\n"));
});

t.test("one seed replays exactly: the same trace hash twice", async (t) => {
  const scenario = clusterScenarios["swarm"]!;
  const a = await runClusterSimulation({ seed: 11, scenario, steps: 600 });
  const b = await runClusterSimulation({ seed: 11, scenario, steps: 600 });
  t.equal(a.traceHash, b.traceHash);
  t.equal(a.events, b.events);
  const other = await runClusterSimulation({ seed: 12, scenario, steps: 600 });
  t.not(other.traceHash, a.traceHash, "another seed is another run");
});
