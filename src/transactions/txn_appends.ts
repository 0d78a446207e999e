import { writeCheckpoint } from "../broker/internal_topic.ts";
import type { LedTxnPartition } from "./led_txn_partition.ts";
import type { TxnLog } from "./log/txn_log.ts";

/** A checkpoint of the partition's transactional ids (`writeCheckpoint`). */
export async function writeTxnCheckpoint(log: TxnLog, p: LedTxnPartition): Promise<void> {
  const bytes = await writeCheckpoint(log, p.index, p.liveRecords());
  if (bytes === 0) return;
  p.appendedBytes = 0;
  p.checkpointBytes = bytes;
}
