import { assert } from "../../runtime/assert.ts";

/**
 * Where a transactional id's transaction is (Kafka's `TransactionState`): `empty` between
 * transactions, `ongoing` once a partition joined, `prepare_*` once its end is decided and its
 * markers go out, `complete_*` once every partition has its marker.
 */
export type TxnPhase =
  | "empty"
  | "ongoing"
  | "prepare_commit"
  | "prepare_abort"
  | "complete_commit"
  | "complete_abort";

/** Each phase by the name Kafka gives its state (DescribeTransactions, ListTransactions). */
export const kafkaTxnStateNames: Readonly<Record<TxnPhase, string>> = {
  empty: "Empty",
  ongoing: "Ongoing",
  prepare_commit: "PrepareCommit",
  prepare_abort: "PrepareAbort",
  complete_commit: "CompleteCommit",
  complete_abort: "CompleteAbort",
};

/** What a transactional id's record in the transaction log holds: the state after a transition. */
export interface TxnRecord {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  timeoutMs: number;
  phase: TxnPhase;
  /** The partitions in the transaction (`txnPartitionKey`), sorted; empty outside one. */
  partitions: readonly string[];
  /** When its first partition joined (wall clock ms, as every time of the record); -1 outside a transaction. */
  startedAtMs: number;
  /** When the record was written (wall clock ms): an idle id expires by it. */
  updatedAtMs: number;
}

/**
 * What waits for the transaction log, or for the markers: a transactional id has at most one such
 * step at a time, and every request that finds one is answered CONCURRENT_TRANSACTIONS.
 */
export type TxnPending =
  /** A record being appended; `then` says what its append completes. */
  | { kind: "append"; record: TxnRecord | null; then: AppendContinuation }
  /** The markers of the decided end being written to every partition of the transaction. */
  | { kind: "markers" }
  /** The markers are written, and the completion the log refused is written again at the next tick. */
  | { kind: "markers_written" };

/** What an append completes once the log has it. */
export type AppendContinuation =
  /**
   * InitProducerId: answered with the record's producer id and epoch; the id's last producer id and
   * epoch become these (KIP-360).
   */
  | { kind: "init"; requestId: number; lastProducerId: number; lastProducerEpoch: number }
  /** AddPartitionsToTxn or AddOffsetsToTxn: answered none. */
  | { kind: "add"; requestId: number }
  /**
   * The end is decided (EndTxn, a fence, a timeout): the markers go out, and `requestId`, when a
   * request waits, is answered `answer`.
   */
  | { kind: "prepare"; requestId: number | null; answer: "none" | "concurrent_transactions"; fence: boolean }
  /** The markers are all written: the transaction is complete. */
  | { kind: "complete" }
  /** The id expired: its tombstone is written, and the coordinator forgets it. */
  | { kind: "expire" };

/** A transactional id's state at its coordinator (Kafka's `TransactionMetadata`). */
export interface TxnState extends TxnRecord {
  /** The producer id and epoch before the last InitProducerId (KIP-360 retries); in memory only. */
  lastProducerId: number;
  lastProducerEpoch: number;
  pending: TxnPending | null;
  /** A fence's append failed: the next fence keeps the epoch it already bumped. */
  failedEpochFence: boolean;
}

/** The coordinator's settings that the core reads. */
export interface TxnSettings {
  /** `[kafka] transaction_max_timeout`: the longest `transaction.timeout.ms` a producer may ask. */
  transactionMaxTimeoutMs: number;
  /** `[kafka] transactional_id_expiration`: an idle id between transactions is forgotten after it. */
  transactionalIdExpirationMs: number;
  /** Partitions one transaction may hold at most, `__consumer_offsets` ones included. */
  partitionsPerTransactionMax: number;
}

/** The highest epoch a producer is ever given: one more is kept so that the coordinator can always fence. */
export const producerEpochMax = 32_766;

/** Whether a producer at `epoch` can be bumped no further and takes a new producer id instead. */
export function isEpochExhausted(epoch: number): boolean {
  return epoch >= producerEpochMax;
}

/** `{topic}:{partition}`: how a transaction names one of its partitions. */
export function txnPartitionKey(topic: string, partition: number): string {
  return `${topic}:${partition}`;
}

/** The topic and partition a `txnPartitionKey` names. */
export function topicPartitionOfKey(key: string): { topic: string; partition: number } {
  const at = key.lastIndexOf(":");
  const partition = Number(key.slice(at + 1));
  assert(at > 0 && Number.isInteger(partition) && partition >= 0, `"${key}" names a topic's partition`);
  return { topic: key.slice(0, at), partition };
}

/** The record a state was last written as (or will be, for a state a transition prepared). */
export function recordOf(state: TxnState): TxnRecord {
  const {
    lastProducerId: _id,
    lastProducerEpoch: _epoch,
    pending: _pending,
    failedEpochFence: _fence,
    ...record
  } = state;
  return record;
}

/** A transactional id's state as the log's record of it gives it, at load. */
export function stateOfRecord(record: TxnRecord): TxnState {
  return { ...record, lastProducerId: -1, lastProducerEpoch: -1, pending: null, failedEpochFence: false };
}
