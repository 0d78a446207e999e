import type { TxnRecord, TxnState } from "./txn_state.ts";

/**
 * The coordinator's answers, as Kafka's error codes name them (the Kafka listener maps each to its
 * code, PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for a request version before it).
 */
export type TxnError =
  | "none"
  | "invalid_request"
  | "invalid_transaction_timeout"
  | "concurrent_transactions"
  | "producer_fenced"
  | "invalid_producer_id_mapping"
  | "invalid_txn_state"
  /** More partitions than `partitionsPerTransactionMax`. */
  | "too_many_partitions"
  /** The coordinator's bounds: transactional ids, and transactions open at once. */
  | "too_many_transactional_ids"
  | "too_many_transactions"
  // The coordinator's own state, and the transaction log's failures, as it reports them:
  | "coordinator_load_in_progress"
  | "coordinator_not_available"
  | "not_coordinator"
  | "unknown_server_error";

/** The failures of an append to the transaction log, as they reach a request. */
export type TxnAppendError = Extract<
  TxnError,
  "coordinator_not_available" | "not_coordinator" | "unknown_server_error"
>;

/**
 * InitProducerId with a transactional id. `expected` is the producer id and epoch a client at v3 or
 * later passes (KIP-360); `freshProducerId` is a producer id never given before, which the shell
 * allocates when `wantsFreshProducerId` says the step needs one.
 */
export interface InitEvent {
  kind: "init";
  requestId: number;
  transactionalId: string;
  timeoutMs: number;
  expected: { producerId: number; epoch: number } | null;
  freshProducerId: number | null;
}

/** AddPartitionsToTxn, or AddOffsetsToTxn with the group's `__consumer_offsets` partition. */
export interface AddEvent {
  kind: "add";
  requestId: number;
  producerId: number;
  epoch: number;
  /** `txnPartitionKey`s. */
  partitions: readonly string[];
}

/** EndTxn: commit or abort. */
export interface EndEvent {
  kind: "end";
  requestId: number;
  producerId: number;
  epoch: number;
  commit: boolean;
}

export type TxnEvent =
  | InitEvent
  | AddEvent
  | EndEvent
  /** The transaction log holds the pending record. */
  | { kind: "appended" }
  | { kind: "append_failed"; error: TxnAppendError }
  /** Every partition of the transaction has its marker. */
  | { kind: "markers_written" }
  /** Time passed: timeouts abort, idle ids expire, a completion the log refused is tried again. */
  | { kind: "tick" };

export type TxnEffect =
  /** Append to the transaction log: the id's record, or its tombstone (null) when it expires. */
  | { kind: "append"; transactionalId: string; record: TxnRecord | null }
  | { kind: "answer"; requestId: number; error: TxnError; producerId: number; epoch: number }
  /** Write COMMIT or ABORT control batches of `producerId` at `epoch` to every partition listed. */
  | {
    kind: "write_markers";
    transactionalId: string;
    producerId: number;
    epoch: number;
    commit: boolean;
    partitions: readonly string[];
  }
  /** The id's tombstone is written: the coordinator drops it. */
  | { kind: "forget"; transactionalId: string }
  /** Told, for the metrics and the log: a transaction open past its timeout is being aborted. */
  | { kind: "timed_out"; transactionalId: string; producerId: number };

export interface TxnStep {
  /** Null for an id that has no state (never initialized, or expired). */
  state: TxnState | null;
  effects: TxnEffect[];
}
