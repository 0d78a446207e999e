/**
 * The broker's refusals, typed. Each message follows "Cannot <do X>: <reason>" and never holds a
 * secret; an error wrapped from a layer below keeps it as `cause`. The HTTP layer maps each class
 * to a status (`src/server/broker_error_status.ts`); nothing here knows of HTTP.
 */

/** A stream, topic or consumer name outside the allowed pattern. */
export class InvalidNameError extends Error {
  override name = "InvalidNameError";
}

/** A topic option of the wrong type, out of its range, or fixed at creation. */
export class InvalidTopicOptionError extends Error {
  override name = "InvalidTopicOptionError";
}

/** A topic's replication factor the cluster cannot place: more than its live nodes, or above the most. */
export class InvalidReplicationFactorError extends InvalidTopicOptionError {
  override name = "InvalidReplicationFactorError";
}

/** A stream or topic that exists already. */
export class AlreadyExistsError extends Error {
  override name = "AlreadyExistsError";
}

/** A stream, topic, partition or stored consumer offset that does not exist. */
export class ResourceNotFoundError extends Error {
  override name = "ResourceNotFoundError";
}

/** A restore from the bucket that cannot go ahead: the bucket, the target or the request rules it out. */
export class RestoreRefusedError extends Error {
  override name = "RestoreRefusedError";
}

/** A read replica that cannot be created: the bucket, the target or the request rules it out. */
export class ReadReplicaRefusedError extends Error {
  override name = "ReadReplicaRefusedError";
}

/** A write to a read-replica topic (a produce, a purge, a change of options): it is served read-only. */
export class ReadReplicaTopicError extends Error {
  override name = "ReadReplicaTopicError";
}

/** Tiering cannot be turned off for a topic that has segments in the object store. */
export class RemoteSegmentsExistError extends Error {
  override name = "RemoteSegmentsExistError";
}

/** An operation on the tiered floor while tiered storage is not enabled. */
export class TieringDisabledError extends Error {
  override name = "TieringDisabledError";
}

/** A partition stores offsets for as many consumers as it may. */
export class ConsumerLimitError extends Error {
  override name = "ConsumerLimitError";
}

/**
 * Why a data operation cannot be served now; each is transient for the caller:
 * - `overloaded`: a bounded wait queue is full: the partition's write queue, the admin lock's, a
 *   shard's fetch slots' or fetch bandwidth's, or the tiered floor's awaits;
 * - `partition_unavailable`: the partition was refused at boot or has failed;
 * - `remote_read_unavailable`: the range is evicted and remote reads are not possible;
 * - `transient`: the chunk cache is full, the object store is slow or throttling, or a concurrent
 *   metadata change took the id a new topic was prepared under.
 */
export type UnavailableReason =
  | "overloaded"
  | "partition_unavailable"
  | "remote_read_unavailable"
  | "transient";

/** A data operation that cannot be served now; retrying later may succeed. */
export class UnavailableError extends Error {
  override name = "UnavailableError";
  readonly reason: UnavailableReason;

  constructor(reason: UnavailableReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/** Data below the tiered floor that the object store no longer has (`missing`) or returns damaged. */
export class RemoteDataError extends Error {
  override name = "RemoteDataError";
  readonly kind: "missing" | "corrupt";

  constructor(kind: "missing" | "corrupt", message: string, options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
  }
}

/** This node does not lead the partition; `leaderId` does (null: none does now). */
export class NotLeaderError extends Error {
  override name = "NotLeaderError";
  readonly leaderId: number | null;

  constructor(message: string, leaderId: number | null) {
    super(message);
    this.leaderId = leaderId;
  }
}

/**
 * An acks=all produce found fewer in-sync replicas than `min_insync_replicas`: before its append
 * (`afterAppend` false: nothing was written) or while it waited (written, but not acknowledged).
 */
export class NotEnoughReplicasError extends Error {
  override name = "NotEnoughReplicasError";
  readonly afterAppend: boolean;

  constructor(message: string, afterAppend: boolean) {
    super(message);
    this.afterAppend = afterAppend;
  }
}

/** An acks=all produce was written but its replicas did not acknowledge it within its timeout. */
export class ReplicationTimeoutError extends Error {
  override name = "ReplicationTimeoutError";
}

/** A change the cluster does not replicate yet (a purge): made on one node, its replicas would differ. */
export class NotReplicatedError extends Error {
  override name = "NotReplicatedError";
}
