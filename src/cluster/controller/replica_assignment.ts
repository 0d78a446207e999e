import { assert } from "../../runtime/assert.ts";
import type { PartitionState } from "./partition_state.ts";

/**
 * Replicas for a new topic's partitions over the live nodes, Kafka's way: partition p's replicas
 * are `replicationFactor` consecutive nodes in id order starting at `(start + p) mod n`, its
 * leader the first. `start` spreads the leaders of successive topics (the caller passes, say, the
 * topic's id). Every replica starts in sync, at epoch 0.
 */
export function assignReplicas(
  partitions: number,
  liveNodeIds: readonly number[],
  replicationFactor: number,
  start: number,
): PartitionState[] {
  const nodes = [...new Set(liveNodeIds)].sort((a, b) => a - b);
  assert(partitions >= 1, `Cannot assign replicas to ${partitions} partitions`);
  assert(
    replicationFactor >= 1 && replicationFactor <= nodes.length,
    `Cannot place ${replicationFactor} replicas on ${nodes.length} live nodes`,
  );
  const states: PartitionState[] = [];
  for (let p = 0; p < partitions; p++) {
    const first = (start + p) % nodes.length;
    const replicas = Array.from({ length: replicationFactor }, (_, i) => nodes[(first + i) % nodes.length]!);
    states.push({ leader: replicas[0]!, leaderEpoch: 0, isr: [...replicas], replicas });
  }
  return states;
}
