import { NotLeaderError, UnavailableError } from "../../broker/broker_errors.ts";
import { internalAppendRefusal } from "../../broker/internal_topic.ts";
import type { GroupCoordinator } from "../group_coordinator.ts";
import type { TxnOffsetRecord } from "../offsets/offsets_records.ts";
import type { GroupError } from "./group_events.ts";
import { type CommitResult, type OffsetToCommit, partitionRefusal } from "./group_offsets.ts";

/** TxnOffsetCommit: the offsets a transactional producer commits in its transaction. */
export interface TxnCommitRequest {
  groupId: string;
  producerId: number;
  epoch: number;
  /** v3 on: the member, and its generation (-1 before). */
  memberId: string;
  groupInstanceId: string | null;
  generation: number;
  offsets: readonly OffsetToCommit[];
}

/**
 * TxnOffsetCommit: the group's check when the request names a member (v3 on; before, any group
 * takes it, as Kafka's does), each partition's, then the offsets appended to the group's partition
 * of `__consumer_offsets` as pending ones of the producer, which its transaction's end commits or
 * drops (`endTxnOffsets`). A producer older than the one whose offsets are pending is refused
 * INVALID_PRODUCER_EPOCH.
 */
export async function txnCommitOffsets(
  coordinator: GroupCoordinator,
  request: TxnCommitRequest,
): Promise<CommitResult> {
  const all = (error: GroupError | null) => request.offsets.map((o) => ({ ...o, error }));
  const route = coordinator.route(request.groupId);
  if (route.error !== null) return all(route.error);
  const p = route.partition;
  if (request.generation >= 0 || request.memberId !== "" || request.groupInstanceId !== null) {
    if (!p.groups.has(request.groupId)) return all("illegal_generation");
    const checked = await coordinator.checkCommit(p, request.groupId, request);
    if (checked !== null) return all(checked);
  }
  const pendingEpoch = p.pendingTxnOffsets.epochOf(request.producerId);
  if (pendingEpoch !== null && pendingEpoch > request.epoch) return all("invalid_producer_epoch");
  const result: CommitResult = request.offsets.map((o) => ({
    ...o,
    error: partitionRefusal(coordinator, o),
  }));
  const accepted = result.filter((r) => r.error === null);
  if (p.pendingTxnOffsets.wouldExceed(accepted.length)) {
    for (const r of accepted) r.error = "offset_metadata_too_large";
    coordinator.deps.logger.warn("transactional commit refused: offsets_per_group_max pending", {
      group: request.groupId,
    });
    return result;
  }
  if (accepted.length === 0) return result;
  const commitTimestampMs = coordinator.deps.clock.wallMs();
  const records: TxnOffsetRecord[] = accepted.map((o) => ({
    kind: "txn_offset",
    producerId: request.producerId,
    epoch: request.epoch,
    groupId: request.groupId,
    topic: o.topic,
    partition: o.partition,
    value: { offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata, commitTimestampMs },
  }));
  try {
    await p.enqueue(async () => {
      const appended = await coordinator.deps.log.append(p.index, records);
      for (const r of records) p.pendingTxnOffsets.add(r);
      coordinator.appended(p, appended.bytes);
    });
  } catch (error) {
    const refusal = internalAppendRefusal(error);
    if (refusal === "unknown_server_error") {
      coordinator.deps.logger.error("transactional commit not written", { group: request.groupId, error });
    }
    for (const r of accepted) r.error = refusal;
  }
  return result;
}

/**
 * A transaction's marker for partition `index` of `__consumer_offsets`: the producer's pending
 * offsets there are committed, or dropped on an abort, once the end's record is replicated. Throws
 * (NotLeaderError, UnavailableError, an append's error) when it cannot be applied here now, and
 * the marker is written again.
 */
export async function endTxnOffsets(
  coordinator: GroupCoordinator,
  index: number,
  marker: { producerId: number; epoch: number; commit: boolean },
): Promise<void> {
  const route = coordinator.routeByIndex(index);
  if (route.error === "not_coordinator") {
    throw new NotLeaderError(`Cannot end a transaction's offsets on partition ${index}: not led here`, null);
  }
  if (route.error !== null) {
    throw new UnavailableError(
      "transient",
      `Cannot end a transaction's offsets on partition ${index}: ${route.error}`,
    );
  }
  const p = route.partition;
  if (p.pendingTxnOffsets.epochOf(marker.producerId) === null) return;
  await p.enqueue(async () => {
    const appended = await coordinator.deps.log.append(p.index, [{ kind: "txn_end", ...marker }]);
    p.endTxn(marker.producerId, marker.commit);
    coordinator.appended(p, appended.bytes);
  });
}
