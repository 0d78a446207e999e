import type { GroupError } from "../groups/group_events.ts";
import { kafkaErrorCode } from "./kafka_error_code.ts";

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
  unknown_server_error: kafkaErrorCode.unknownServerError,
};

/** The Kafka error code of a group refusal; 0 for none. */
export function groupErrorCode(error: GroupError | null): number {
  return error === null ? kafkaErrorCode.none : codes[error];
}
