import {
  NotEnoughReplicasError,
  NotLeaderError,
  ReadReplicaTopicError,
  RemoteDataError,
  ReplicationTimeoutError,
  ResourceNotFoundError,
  UnavailableError,
} from "../broker/broker_errors.ts";
import { RecordBatchError } from "../log/record_batch.ts";
import type { Logger } from "../runtime/logger.ts";
import { kafkaErrorCode } from "./kafka_error_code.ts";

/**
 * The Kafka error code a partition is answered with when its produce, fetch or lookup failed: each
 * of the broker's typed refusals has one; anything else is UNKNOWN_SERVER_ERROR, logged (without
 * the request's data) so that it is never lost.
 */
export function kafkaErrorOf(error: unknown, logger: Logger, what: string): number {
  if (error instanceof RecordBatchError) {
    if (error.refusal === "unsupported") return kafkaErrorCode.unsupportedForMessageFormat;
    if (error.refusal === "timestamp") return kafkaErrorCode.invalidTimestamp;
    if (error.refusal === "too_large") return kafkaErrorCode.messageTooLarge;
    return kafkaErrorCode.corruptMessage;
  }
  if (error instanceof ResourceNotFoundError) return kafkaErrorCode.unknownTopicOrPartition;
  // A read replica is served read-only: not an error a retry mends.
  if (error instanceof ReadReplicaTopicError) return kafkaErrorCode.invalidTopicException;
  // Another node leads, or none does now: the client refreshes its metadata and moves on.
  if (error instanceof NotLeaderError) {
    return error.leaderId === null ? kafkaErrorCode.leaderNotAvailable : kafkaErrorCode.notLeaderOrFollower;
  }
  if (error instanceof NotEnoughReplicasError) {
    return error.afterAppend ? kafkaErrorCode.notEnoughReplicasAfterAppend : kafkaErrorCode.notEnoughReplicas;
  }
  if (error instanceof ReplicationTimeoutError) return kafkaErrorCode.requestTimedOut;
  if (error instanceof UnavailableError) {
    // A full queue sheds the request: a retriable timeout. A refused partition, or an evicted range
    // that cannot be read remotely, is a storage error; the client retries or moves on.
    return error.reason === "overloaded" || error.reason === "transient"
      ? kafkaErrorCode.requestTimedOut
      : kafkaErrorCode.kafkaStorageError;
  }
  if (error instanceof RemoteDataError) return kafkaErrorCode.kafkaStorageError;
  logger.error(`Cannot ${what}: an unexpected failure`, {
    error: error instanceof Error ? error.message : String(error),
  });
  return kafkaErrorCode.unknownServerError;
}
