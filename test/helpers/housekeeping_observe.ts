import {
  type HousekeepingState,
  type HousekeepingStep,
  observeChanges,
  type PartitionView,
} from "../../src/tier/housekeeping/housekeeping_core.ts";

/**
 * `observeChanges` from a whole snapshot, as a test states it: the partitions in `partitions` are
 * every one housekeeping serves; what differs from the state is passed as changed, and a partition
 * left out as removed.
 */
export function observe(
  state: HousekeepingState,
  event: { partitions: readonly PartitionView[]; requestCount: number },
  nowMs: number,
): HousekeepingStep {
  const present = new Set(event.partitions.map((v) => v.key));
  const removed = [...state.partitions.keys()].filter((key) => !present.has(key));
  const changed = event.partitions.filter((v) => {
    const p = state.partitions.get(v.key);
    return p === undefined || p.incarnation !== v.incarnation || p.floor !== v.floor ||
      p.deletedUpToOffset !== v.deletedUpToOffset;
  });
  return observeChanges(state, { changed, removed, requestCount: event.requestCount }, nowMs);
}
