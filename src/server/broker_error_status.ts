import {
  AlreadyExistsError,
  ConsumerLimitError,
  InvalidNameError,
  InvalidTopicOptionError,
  NotEnoughReplicasError,
  NotReplicatedError,
  ReadReplicaRefusedError,
  ReadReplicaTopicError,
  RemoteDataError,
  RemoteSegmentsExistError,
  ReplicationTimeoutError,
  ResourceNotFoundError,
  RestoreRefusedError,
  TieringDisabledError,
  UnavailableError,
  type UnavailableReason,
} from "../broker/broker_errors.ts";
import { ApiError, badRequest, conflict, notFound, unavailable } from "./api_errors.ts";

/** The `retry-after` each kind of unavailability answers with, in seconds. */
const retryAfterSeconds: Record<UnavailableReason, number> = {
  overloaded: 1,
  partition_unavailable: 30,
  remote_read_unavailable: 30,
  transient: 1,
};

/**
 * The API error a refusal answers with: its status, error code and headers, with the refusal's
 * message, and the refusal as its `cause`. Null for anything else, which is the server's fault (a
 * 500).
 */
export function apiErrorOf(error: unknown): ApiError | null {
  if (error instanceof ApiError) return error;
  const cause = { cause: error };
  if (error instanceof InvalidNameError) return badRequest("invalid_name", error.message, cause);
  if (error instanceof InvalidTopicOptionError) return badRequest("invalid_option", error.message, cause);
  if (error instanceof TieringDisabledError) return badRequest("tiering_disabled", error.message, cause);
  if (error instanceof ResourceNotFoundError) return notFound(error.message, cause);
  if (error instanceof AlreadyExistsError) return conflict("already_exists", error.message, cause);
  if (error instanceof RemoteSegmentsExistError) {
    return conflict("remote_segments_exist", error.message, cause);
  }
  if (error instanceof RestoreRefusedError) return conflict("restore_refused", error.message, cause);
  if (error instanceof ReadReplicaRefusedError) {
    return conflict("read_replica_refused", error.message, cause);
  }
  if (error instanceof ReadReplicaTopicError) return conflict("read_replica", error.message, cause);
  if (error instanceof ConsumerLimitError) return conflict("limit_exceeded", error.message, cause);
  if (error instanceof NotReplicatedError) return conflict("not_replicated", error.message, cause);
  if (error instanceof UnavailableError) {
    return unavailable(error.reason, error.message, retryAfterSeconds[error.reason], cause);
  }
  if (error instanceof NotEnoughReplicasError) {
    return unavailable(
      error.afterAppend ? "not_enough_replicas_after_append" : "not_enough_replicas",
      error.message,
      1,
      cause,
    );
  }
  if (error instanceof ReplicationTimeoutError) {
    return unavailable("replication_timeout", error.message, 1, cause);
  }
  if (error instanceof RemoteDataError) {
    return new ApiError(502, `remote_data_${error.kind}`, error.message, {}, cause);
  }
  return null;
}
