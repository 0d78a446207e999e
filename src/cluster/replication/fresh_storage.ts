import type { Coordinator } from "../../coordinator/coordinator.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ClusterKeys } from "../node/cluster_keys.ts";
import {
  checkPartitionState,
  decodePartitionState,
  encodePartitionState,
  noLeader,
  type PartitionState,
  tidyPartitionState,
} from "../controller/partition_state.ts";

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
 * The state without `nodeId` among the in-sync and eligible replicas, and out of the leadership (a
 * new epoch); null when it is in neither, or when no other replica holds the records (it stays,
 * and the partition waits for what only the bucket may still hold).
 */
export function withoutNode(state: PartitionState, nodeId: number): PartitionState | null {
  const eligible = state.eligible ?? [];
  if (!state.isr.includes(nodeId) && !eligible.includes(nodeId)) return null;
  const isr = state.isr.filter((id) => id !== nodeId);
  const others = eligible.filter((id) => id !== nodeId);
  if (isr.length === 0 && others.length === 0) return null;
  const leads = state.leader === nodeId;
  return checkPartitionState(tidyPartitionState({
    ...state,
    isr,
    eligible: others,
    leader: leads ? noLeader : state.leader,
    leaderEpoch: leads ? state.leaderEpoch + 1 : state.leaderEpoch,
    leaderSession: leads ? undefined : state.leaderSession,
  }));
}

/**
 * A node whose data directory is new (first start, or wiped: its disk replaced) holds none of the
 * records the partition states may still list it in sync for. Before it registers, so that no
 * controller can elect it on the strength of data it lost, it takes itself out of every in-sync
 * and eligible set (`withoutNode`).
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
    if (await leaveOne(coordinator, kv.key, nodeId, logger)) left++;
  }
  if (left > 0) {
    logger.info("a new data directory left the in-sync sets", { node_id: nodeId, partitions: left });
  }
  return left;
}

/** Attempts at leaving one partition's sets while others write its state; then the start fails. */
export const leaveAttemptsMax = 16;

/**
 * Takes the node out of one partition's sets, reading the state again after each race with its
 * leader or the controller; true when it wrote. Throws after `leaveAttemptsMax` races: the node
 * must not register while a state may still list it.
 */
async function leaveOne(
  coordinator: Coordinator,
  key: string,
  nodeId: number,
  logger: Logger,
): Promise<boolean> {
  for (let attempt = 0; attempt < leaveAttemptsMax; attempt++) {
    const kv = (await coordinator.range({ key })).kvs[0];
    if (kv === undefined) return false;
    const state = decodePartitionState(kv.key, kv.value);
    const next = withoutNode(state, nodeId);
    if (next === null) {
      if (state.isr.includes(nodeId)) {
        logger.error("a new data directory was the last replica holding a partition's records", { key });
      }
      return false;
    }
    const written = await coordinator.txn({
      compare: [{ key, target: "modRevision", result: "equal", value: kv.modRevision }],
      success: [{ kind: "put", key, value: encodePartitionState(next) }],
    });
    if (written.succeeded) return true;
  }
  throw new Error(
    `Cannot take node ${nodeId} out of the in-sync sets of ${key}: its state changed ${leaveAttemptsMax} times`,
  );
}
