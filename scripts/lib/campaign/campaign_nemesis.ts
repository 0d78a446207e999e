import type { FaultStep } from "./fault_schedule.ts";
import { describePartition } from "../kafka_metadata.ts";
import type { LocalCluster, LocalNode } from "../local_cluster.ts";
import { MissedDeadlineError, realTime, waitFor } from "../../../test/helpers/wait_for.ts";

/**
 * The nemesis of a fault campaign: runs a schedule's faults against a local cluster one after
 * another, each on the node its kind names at the moment it starts, and heals each when it ends.
 */

/** A fault as it ran: the nodes (or the etcd member) it struck, and when, in ms since the start. */
export interface FaultRecord {
  kind: FaultStep["kind"];
  startedMs: number;
  holdMs: number;
  nodes: number[];
  etcdMember: number | null;
  /** Why it was skipped (no leader known when it was due), or null when it ran. */
  skipped: string | null;
}

/** Milliseconds a fault waits for a known leader before it is skipped. */
const leaderWaitMs = 15_000;

/** The Kafka addresses of the nodes that run and are not paused. */
export function liveBootstrap(cluster: LocalCluster): string {
  return cluster.nodes.filter((n) => n.process !== null && !n.paused).map((n) => n.kafka).join(",");
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The partition's leader as a live node names it, waiting (bounded) for one that runs. */
async function currentLeader(cluster: LocalCluster, topic: string): Promise<LocalNode | null> {
  let leader: LocalNode | undefined;
  const found = await waitFor(`a running leader of ${topic}`, async () => {
    const view = await describePartition(liveBootstrap(cluster), topic);
    leader = view === null ? undefined : cluster.nodes.find((n) => n.id === view.leader);
    return leader !== undefined && leader.process !== null && !leader.paused;
  }, { deadlineMs: leaderWaitMs, pace: realTime(100) }).then(() => true, (error) => {
    if (error instanceof MissedDeadlineError) return false;
    throw error;
  });
  return found ? leader! : null;
}

/** Strikes the nodes (or the etcd member) the step's kind names, holds, and heals them. */
async function runStep(cluster: LocalCluster, step: FaultStep, leader: LocalNode): Promise<FaultRecord> {
  const followers = cluster.nodes.filter((n) => n !== leader && n.process !== null && !n.paused);
  const follower = followers[step.pick % Math.max(1, followers.length)];
  const record = { kind: step.kind, startedMs: 0, holdMs: step.holdMs, etcdMember: null, skipped: null };
  const struck = (nodes: (LocalNode | undefined)[]) => nodes.filter((n): n is LocalNode => n !== undefined);
  switch (step.kind) {
    case "kill_leader":
    case "kill_follower":
    case "kill_leader_and_follower": {
      const nodes = struck(
        step.kind === "kill_leader"
          ? [leader]
          : step.kind === "kill_follower"
          ? [follower]
          : [leader, follower],
      );
      await Promise.all(nodes.map((n) => cluster.kill(n)));
      await pause(step.holdMs);
      await Promise.all(nodes.map((n) => cluster.restart(n)));
      return { ...record, nodes: nodes.map((n) => n.id) };
    }
    case "pause_leader":
    case "pause_follower": {
      const nodes = struck([step.kind === "pause_leader" ? leader : follower]);
      nodes.forEach((n) => cluster.pause(n));
      await pause(step.holdMs);
      nodes.forEach((n) => cluster.resume(n));
      return { ...record, nodes: nodes.map((n) => n.id) };
    }
    case "kill_etcd_member": {
      const member = 1 + step.pick % 3;
      await cluster.killEtcdMember(member);
      await pause(step.holdMs);
      await cluster.restartEtcdMember(member);
      return { ...record, nodes: [], etcdMember: member };
    }
  }
}

/** Runs `steps` in order, each no earlier than its start; `startMs` is the campaign's performance.now(). */
export async function runNemesis(
  cluster: LocalCluster,
  topic: string,
  steps: FaultStep[],
  startMs: number,
  log: (line: string) => void,
): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  for (const step of steps) {
    await pause(Math.max(0, startMs + step.startMs - performance.now()));
    const leader = await currentLeader(cluster, topic);
    const startedMs = Math.round(performance.now() - startMs);
    if (leader === null) {
      const skipped = `no live leader within ${leaderWaitMs} ms`;
      records.push({ ...step, startedMs, nodes: [], etcdMember: null, skipped });
      log(`${startedMs} ms: ${step.kind} skipped: ${skipped}`);
      continue;
    }
    const record = { ...await runStep(cluster, step, leader), startedMs };
    records.push(record);
    const whom = record.etcdMember !== null
      ? `etcd member ${record.etcdMember}`
      : `node ${record.nodes.join(", ")}`;
    log(`${startedMs} ms: ${step.kind} (${whom}) for ${step.holdMs} ms`);
  }
  return records;
}
