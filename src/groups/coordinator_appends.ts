import { writeCheckpoint } from "../broker/internal_topic.ts";
import type { CoordinatedPartition } from "./coordinated_partition.ts";
import type { OffsetsLog } from "./offsets/offsets_log.ts";
import type { OffsetsRecord } from "./offsets/offsets_records.ts";
import { storedGroupOf } from "./offsets/stored_group.ts";

/**
 * Every live record of the partition, as memory holds it: each group's metadata, every committed
 * offset, then every transactional offset still pending.
 */
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
  records.push(...p.pendingTxnOffsets.records());
  return records;
}

/** A checkpoint of the partition's groups and offsets (`writeCheckpoint`). */
export async function writeGroupsCheckpoint(log: OffsetsLog, p: CoordinatedPartition): Promise<void> {
  const bytes = await writeCheckpoint(log, p.index, liveRecords(p));
  if (bytes === 0) return;
  p.appendedBytes = 0;
  p.checkpointBytes = bytes;
}
