import { isBug } from "../runtime/assert.ts";
import {
  NotEnoughReplicasError,
  NotLeaderError,
  ReadReplicaTopicError,
  RemoteDataError,
  ReplicationTimeoutError,
  ResourceNotFoundError,
  UnavailableError,
} from "../broker/broker_errors.ts";
import { RecordBatchError } from "../log/batch/record_batch.ts";
import { ProducerRefusedError } from "../log/log_errors.ts";
import type { Logger } from "../runtime/logger.ts";
import type { GroupError } from "../groups/core/group_events.ts";

/**
 * Kafka's error codes (its `Errors` table) that Strata answers with. A code travels in a response
 * where Kafka puts it (per partition, per topic, or for the whole response); its meaning, and what a
 * client does about it, is Kafka's.
 */
export const kafkaErrorCode = {
  unknownServerError: -1,
  none: 0,
  offsetOutOfRange: 1,
  corruptMessage: 2,
  unknownTopicOrPartition: 3,
  leaderNotAvailable: 5,
  notLeaderOrFollower: 6,
  requestTimedOut: 7,
  messageTooLarge: 10,
  offsetMetadataTooLarge: 12,
  coordinatorLoadInProgress: 14,
  coordinatorNotAvailable: 15,
  notCoordinator: 16,
  invalidTopicException: 17,
  recordListTooLarge: 18,
  notEnoughReplicas: 19,
  notEnoughReplicasAfterAppend: 20,
  invalidRequiredAcks: 21,
  illegalGeneration: 22,
  inconsistentGroupProtocol: 23,
  invalidGroupId: 24,
  unknownMemberId: 25,
  invalidSessionTimeout: 26,
  rebalanceInProgress: 27,
  invalidCommitOffsetSize: 28,
  groupAuthorizationFailed: 30,
  clusterAuthorizationFailed: 31,
  invalidTimestamp: 32,
  unsupportedSaslMechanism: 33,
  illegalSaslState: 34,
  unsupportedVersion: 35,
  topicAlreadyExists: 36,
  invalidPartitions: 37,
  invalidReplicationFactor: 38,
  invalidConfig: 40,
  invalidRequest: 42,
  unsupportedForMessageFormat: 43,
  policyViolation: 44,
  outOfOrderSequenceNumber: 45,
  invalidProducerEpoch: 47,
  invalidTxnState: 48,
  invalidProducerIdMapping: 49,
  invalidTransactionTimeout: 50,
  concurrentTransactions: 51,
  transactionCoordinatorFenced: 52,
  operationNotAttempted: 55,
  kafkaStorageError: 56,
  saslAuthenticationFailed: 58,
  nonEmptyGroup: 68,
  groupIdNotFound: 69,
  fencedLeaderEpoch: 74,
  unknownLeaderEpoch: 75,
  memberIdRequired: 79,
  groupMaxSizeReached: 81,
  fencedInstanceId: 82,
  unstableOffsetCommit: 88,
  producerFenced: 90,
  transactionalIdNotFound: 105,
} as const;

export type KafkaErrorCode = (typeof kafkaErrorCode)[keyof typeof kafkaErrorCode];

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
  if (error instanceof ProducerRefusedError) {
    if (error.refusal === "out_of_order") return kafkaErrorCode.outOfOrderSequenceNumber;
    if (error.refusal === "old_epoch") return kafkaErrorCode.invalidProducerEpoch;
    if (error.refusal === "invalid_txn_state") return kafkaErrorCode.invalidTxnState;
    if (error.refusal === "coordinator_fenced") return kafkaErrorCode.transactionCoordinatorFenced;
    // Kafka has no bound on a partition's producers, and so no code for it: a policy refuses it.
    return kafkaErrorCode.policyViolation;
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
  const message = isBug(error)
    ? `bug: ${what} threw; the request stops`
    : `Cannot ${what}: an unexpected failure`;
  logger.error(message, { error });
  return kafkaErrorCode.unknownServerError;
}

/** Each refusal of the group coordinator as Kafka's error code names it. */
const codes: Readonly<Record<GroupError, number>> = {
  unknown_member_id: kafkaErrorCode.unknownMemberId,
  illegal_generation: kafkaErrorCode.illegalGeneration,
  rebalance_in_progress: kafkaErrorCode.rebalanceInProgress,
  inconsistent_group_protocol: kafkaErrorCode.inconsistentGroupProtocol,
  invalid_session_timeout: kafkaErrorCode.invalidSessionTimeout,
  member_id_required: kafkaErrorCode.memberIdRequired,
  group_max_size_reached: kafkaErrorCode.groupMaxSizeReached,
  fenced_instance_id: kafkaErrorCode.fencedInstanceId,
  coordinator_not_available: kafkaErrorCode.coordinatorNotAvailable,
  not_coordinator: kafkaErrorCode.notCoordinator,
  coordinator_load_in_progress: kafkaErrorCode.coordinatorLoadInProgress,
  invalid_group_id: kafkaErrorCode.invalidGroupId,
  group_id_not_found: kafkaErrorCode.groupIdNotFound,
  non_empty_group: kafkaErrorCode.nonEmptyGroup,
  offset_metadata_too_large: kafkaErrorCode.offsetMetadataTooLarge,
  unknown_topic_or_partition: kafkaErrorCode.unknownTopicOrPartition,
  invalid_producer_epoch: kafkaErrorCode.invalidProducerEpoch,
  unstable_offset_commit: kafkaErrorCode.unstableOffsetCommit,
  unknown_server_error: kafkaErrorCode.unknownServerError,
};

/** The Kafka error code of a group refusal; 0 for none. */
export function groupErrorCode(error: GroupError | null): number {
  return error === null ? kafkaErrorCode.none : codes[error];
}
