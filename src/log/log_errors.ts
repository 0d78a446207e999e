/**
 * A partition whose writes failed or whose files are inconsistent; it serves no more writes. The
 * failure it was made from, if any, is its `cause`.
 */
export class PartitionUnavailableError extends Error {
  override name = "PartitionUnavailableError";
  constructor(label: string, reason: string, options?: ErrorOptions) {
    super(`Cannot use partition ${label}: ${reason}`, options);
  }
}

/**
 * Boot found a chain it cannot accept (a hole, corruption in the middle); the partition is refused.
 * The error it was found through (an unreadable superblock or marker), if any, is its `cause`.
 */
export class PartitionRefusedError extends Error {
  override name = "PartitionRefusedError";
  constructor(label: string, reason: string, options?: ErrorOptions) {
    super(`Cannot open partition ${label}: ${reason}`, options);
  }
}

/** Too many writes are queued on one partition: the producer should retry later. */
export class WriteQueueFullError extends Error {
  override name = "WriteQueueFullError";
  constructor(label: string, limit: number) {
    super(`Cannot append to partition ${label}: ${limit} writes are already queued`);
  }
}

/**
 * A read reached a segment whose `.log` was evicted to the object store, and the partition has no
 * remote reader (tiering is off): 503 `remote_read_unavailable` (docs/DESIGN.md, "Fail-closed reads").
 */
export class RemoteReadUnavailableError extends Error {
  override name = "RemoteReadUnavailableError";
  constructor(label: string, startOffset: number) {
    super(
      `Cannot read partition ${label} at segment ${startOffset}: its data is in the object store and remote reads are not available`,
    );
  }
}

/** A follower was handed batches that do not continue its log: the leader and it disagree. */
export class ReplicaAppendError extends Error {
  override name = "ReplicaAppendError";
}

/**
 * Why a partition refused an idempotent producer's batch: a gap in its sequence or a new epoch not
 * starting at 0 (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER), an epoch older than the partition's
 * (INVALID_PRODUCER_EPOCH), or a new producer past the partition's bound on producers.
 */
export type ProducerRefusal =
  | "out_of_order"
  | "old_epoch"
  | "invalid_txn_state"
  | "too_many_producers"
  /** A transaction marker of a coordinator older than the one whose marker the producer had last. */
  | "coordinator_fenced";

/** A produce the partition's producer state refuses; nothing of it is appended. */
export class ProducerRefusedError extends Error {
  override name = "ProducerRefusedError";
  readonly refusal: ProducerRefusal;
  constructor(label: string, refusal: ProducerRefusal, reason: string) {
    super(`Cannot append to partition ${label}: ${reason}`);
    this.refusal = refusal;
  }
}
