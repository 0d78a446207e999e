import {
  NotEnoughReplicasError,
  NotLeaderError,
  ReplicationTimeoutError,
  ResourceNotFoundError,
  UnavailableError,
} from "../broker/broker_errors.ts";
import { QueueFullError } from "../runtime/wait_errors.ts";
import type { CoordinatedPartition } from "./coordinated_partition.ts";
import type { GroupError } from "./core/group_events.ts";
import type { OffsetsLog } from "./offsets/offsets_log.ts";
import type { OffsetsRecord } from "./offsets/offsets_records.ts";
import { storedGroupOf } from "./offsets/stored_group.ts";

/** Records one append of a checkpoint carries at most. */
export const checkpointRecordsPerAppendMax = 512;

/**
 * What a request is told when its records could not be appended: NOT_COORDINATOR when this node
 * stopped leading the partition (the client finds the new coordinator), COORDINATOR_NOT_AVAILABLE
 * when the partition cannot take it now (too few replicas in sync, a full queue; the client retries).
 */
export function appendRefusal(error: unknown): GroupError {
  if (error instanceof NotLeaderError) return "not_coordinator";
  if (
    error instanceof NotEnoughReplicasError || error instanceof ReplicationTimeoutError ||
    error instanceof UnavailableError || error instanceof QueueFullError ||
    error instanceof ResourceNotFoundError
  ) {
    return "coordinator_not_available";
  }
  return "unknown_server_error";
}

/** Every live record of the partition, as memory holds it: each group's metadata, then every committed offset. */
export function liveRecords(p: CoordinatedPartition): OffsetsRecord[] {
  const records: OffsetsRecord[] = [];
  for (const [groupId, state] of p.groups) {
    records.push({ kind: "group", groupId, value: storedGroupOf(state) });
  }
  for (const groupId of p.offsets.groupIds()) {
    for (
      const { topic, partition, offset, leaderEpoch, metadata, commitTimestampMs } of p.offsets.entriesOf(
        groupId,
      )
    ) {
      records.push({
        kind: "offset",
        groupId,
        topic,
        partition,
        value: { offset, leaderEpoch, metadata, commitTimestampMs },
      });
    }
  }
  return records;
}

/**
 * A checkpoint, run in the partition's turn (every append queued before it has been applied to
 * memory): the live records are written again at the log's end, then the segments wholly below the
 * first of them are deleted. What they held is superseded by the checkpoint or was deleted, so the
 * partition stays about the size of its live records plus `offsets_checkpoint_bytes`.
 */
export async function writeCheckpoint(log: OffsetsLog, p: CoordinatedPartition): Promise<void> {
  const records = liveRecords(p);
  if (records.length === 0) return;
  let baseOffset: number | null = null;
  let bytes = 0;
  for (let at = 0; at < records.length; at += checkpointRecordsPerAppendMax) {
    const appended = await log.append(p.index, records.slice(at, at + checkpointRecordsPerAppendMax));
    baseOffset ??= appended.baseOffset;
    bytes += appended.bytes;
  }
  await log.trimBelow(p.index, baseOffset!);
  p.appendedBytes = 0;
  p.checkpointBytes = bytes;
}
