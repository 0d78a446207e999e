import type { Coordinator } from "../coordinator/coordinator.ts";
import type { Disk } from "../runtime/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import type { ClusterKeys } from "./cluster_keys.ts";
import {
  checkPartitionState,
  decodePartitionState,
  encodePartitionState,
  noLeader,
} from "./partition_state.ts";

/** The file that says a data directory has served as this node's storage before. */
export const storageMarkerName = "cluster-storage.json";

/** True when the data directory at `dataPath` has served this node before (its marker is there). */
export async function storageKnown(disk: Disk, dataPath: string): Promise<boolean> {
  return (await disk.stat(`${dataPath}/${storageMarkerName}`)) !== null;
}

/** Marks the data directory as this node's storage, durably; after its in-sync sets were left. */
export async function markStorage(disk: Disk, dataPath: string, nodeId: number): Promise<void> {
  const path = `${dataPath}/${storageMarkerName}`;
  const file = await disk.open(path, { create: true });
  try {
    await file.truncate(0);
    await file.writeAt(new TextEncoder().encode(JSON.stringify({ node_id: nodeId })), 0);
    await file.sync();
  } finally {
    await file.close();
  }
  await disk.fsyncDir(dataPath);
}

/**
 * A node whose data directory is new (first start, or wiped: its disk replaced) holds none of the
 * records the partition states may still list it in sync for. Before it registers, so that no
 * controller can elect it on the strength of data it lost, it takes itself out of every in-sync
 * set that lists others too (and out of the leadership, a new epoch); where it is the last one in
 * sync the state stays, and the partition waits for what only the bucket may still hold.
 */
export async function leaveInSyncSets(
  coordinator: Coordinator,
  keys: ClusterKeys,
  nodeId: number,
  logger: Logger,
): Promise<number> {
  const { kvs } = await coordinator.range({ key: keys.partitions, prefix: true });
  let left = 0;
  for (const kv of kvs) {
    const state = decodePartitionState(kv.key, kv.value);
    if (!state.isr.includes(nodeId)) continue;
    if (state.isr.length === 1) {
      logger.error("a new data directory was the last in-sync replica of a partition", { key: kv.key });
      continue;
    }
    const leads = state.leader === nodeId;
    const next = checkPartitionState({
      ...state,
      isr: state.isr.filter((id) => id !== nodeId),
      leader: leads ? noLeader : state.leader,
      leaderEpoch: leads ? state.leaderEpoch + 1 : state.leaderEpoch,
    });
    const written = await coordinator.txn({
      compare: [{ key: kv.key, target: "modRevision", result: "equal", value: kv.modRevision }],
      success: [{ kind: "put", key: kv.key, value: encodePartitionState(next) }],
    });
    // A state changed meanwhile is decided again by its leader or the controller; one more pass
    // would race them the same way, so the node says what it did and goes on.
    if (written.succeeded) left++;
    else {logger.warn("a partition state changed while a new data directory left its in-sync set", {
        key: kv.key,
      });}
  }
  if (left > 0) {
    logger.info("a new data directory left the in-sync sets", { node_id: nodeId, partitions: left });
  }
  return left;
}
