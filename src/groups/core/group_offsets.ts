import type { CommittedEntry } from "../offsets/committed_offsets.ts";
import { internalAppendRefusal } from "../../broker/internal_topic.ts";
import type { GroupError } from "./group_events.ts";
import type { GroupCoordinator } from "../group_coordinator.ts";
import type { CommittedOffset, OffsetsRecord } from "../offsets/offsets_records.ts";

const utf8 = new TextEncoder();

/** One partition's offset in an OffsetCommit. */
export interface OffsetToCommit {
  topic: string;
  partition: number;
  offset: number;
  /** -1 when the consumer did not say. */
  leaderEpoch: number;
  metadata: string | null;
}

export interface CommitRequest {
  groupId: string;
  memberId: string;
  groupInstanceId: string | null;
  /** -1 for a commit outside group management. */
  generation: number;
  offsets: readonly OffsetToCommit[];
}

/** Each partition of a commit with its outcome (null: committed), in the request's order. */
export type CommitResult = (OffsetToCommit & { error: GroupError | null })[];

/**
 * OffsetCommit: the group's check (a member of the current generation, or a standalone commit to
 * an empty group), each partition's (a metadata string within `offset_metadata_max_bytes`, a topic
 * and partition that exist, room in the group's bound), then the accepted offsets appended to the
 * group's partition of `__consumer_offsets` and, once replicated, taken into memory. A commit to a
 * group that does not exist with a generation is ILLEGAL_GENERATION, as Kafka answers it.
 */
export async function commitOffsets(
  coordinator: GroupCoordinator,
  request: CommitRequest,
): Promise<CommitResult> {
  const all = (error: GroupError | null) => request.offsets.map((o) => ({ ...o, error }));
  const route = coordinator.route(request.groupId);
  if (route.error !== null) return all(route.error);
  const p = route.partition;
  if (!p.groups.has(request.groupId) && request.generation >= 0) return all("illegal_generation");
  const checked = await coordinator.checkCommit(p, request.groupId, request);
  if (checked !== null) return all(checked);
  const { deps } = coordinator;
  const result: CommitResult = request.offsets.map((o) => ({
    ...o,
    error: partitionRefusal(coordinator, o),
  }));
  const accepted = result.filter((r) => r.error === null);
  if (p.offsets.wouldExceed(request.groupId, accepted)) {
    for (const r of accepted) r.error = "offset_metadata_too_large";
    deps.logger.warn("commit refused: offsets_per_group_max reached", { group: request.groupId });
    return result;
  }
  if (accepted.length === 0) return result;
  const commitTimestampMs = deps.clock.wallMs();
  const records: OffsetsRecord[] = accepted.map((o) => ({
    kind: "offset",
    groupId: request.groupId,
    topic: o.topic,
    partition: o.partition,
    value: { offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata, commitTimestampMs },
  }));
  try {
    await p.enqueue(async () => {
      const appended = await deps.log.append(p.index, records);
      for (const r of records) {
        if (r.kind === "offset") p.offsets.set(r.groupId, r.topic, r.partition, r.value);
      }
      coordinator.appended(p, appended.bytes);
    });
  } catch (error) {
    const refusal = internalAppendRefusal(error);
    if (refusal === "unknown_server_error") {
      deps.logger.error("commit not written", { group: request.groupId, error });
    }
    for (const r of accepted) r.error = refusal;
  }
  return result;
}

/** A partition's own refusal in a commit: a metadata string too long, or a partition that does not exist. */
export function partitionRefusal(coordinator: GroupCoordinator, o: OffsetToCommit): GroupError | null {
  const { settings, topicPartitions } = coordinator.deps;
  if (o.metadata !== null && utf8.encode(o.metadata).length > settings.offsetMetadataBytesMax) {
    return "offset_metadata_too_large";
  }
  const partitions = topicPartitions(o.topic);
  if (partitions === null || o.partition < 0 || o.partition >= partitions || o.offset < 0) {
    return "unknown_topic_or_partition";
  }
  return null;
}

/** One partition's committed offset as OffsetFetch answers it: offset -1 when none is committed. */
export interface FetchedOffset {
  partition: number;
  offset: number;
  leaderEpoch: number;
  metadata: string | null;
  /** UNSTABLE_OFFSET_COMMIT when stable offsets were asked for and a transaction's is pending. */
  error: GroupError | null;
}

export interface FetchedOffsets {
  error: GroupError | null;
  topics: { topic: string; partitions: FetchedOffset[] }[];
}

/**
 * OffsetFetch: the group's committed offsets for the partitions asked (every partition it committed
 * when `topics` is null), as memory holds them once replicated; -1 and no metadata where none is.
 * With `requireStable` (v7 on), a partition with a transaction's offset pending is answered
 * UNSTABLE_OFFSET_COMMIT, and the client asks again once the transaction ended.
 */
export function fetchOffsets(
  coordinator: GroupCoordinator,
  groupId: string,
  topics: readonly { topic: string; partitions: readonly number[] }[] | null,
  requireStable = false,
): FetchedOffsets {
  const route = coordinator.route(groupId);
  if (route.error !== null) return { error: route.error, topics: [] };
  const { offsets, pendingTxnOffsets } = route.partition;
  const asked = topics ?? committedPartitions(offsets.entriesOf(groupId));
  return {
    error: null,
    topics: asked.map(({ topic, partitions }) => ({
      topic,
      partitions: partitions.map((partition) =>
        requireStable && pendingTxnOffsets.has(groupId, topic, partition)
          ? { partition, offset: -1, leaderEpoch: -1, metadata: "", error: "unstable_offset_commit" }
          : fetched(partition, offsets.get(groupId, topic, partition))
      ),
    })),
  };
}

/** The partitions of `entries` by topic, in the order the topics come. */
function committedPartitions(entries: readonly CommittedEntry[]): { topic: string; partitions: number[] }[] {
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of entries) {
    const partitions = byTopic.get(topic);
    if (partitions === undefined) byTopic.set(topic, [partition]);
    else partitions.push(partition);
  }
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}

function fetched(partition: number, committed: CommittedOffset | null): FetchedOffset {
  return committed === null ? { partition, offset: -1, leaderEpoch: -1, metadata: "", error: null } : {
    partition,
    offset: committed.offset,
    leaderEpoch: committed.leaderEpoch,
    metadata: committed.metadata,
    error: null,
  };
}

/**
 * The smallest offset any group this node coordinates committed for a topic's partition, or null:
 * what total retention's consumer barrier keeps beside the HTTP API's stored offsets.
 */
export function minimumCommitted(
  coordinator: GroupCoordinator,
  topic: string,
  partition: number,
): number | null {
  let least: number | null = null;
  for (const p of coordinator.loadedPartitions()) {
    const offset = p.offsets.minimumFor(topic, partition);
    if (offset !== null && (least === null || offset < least)) least = offset;
  }
  return least;
}
