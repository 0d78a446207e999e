import { fnv1a32 } from "../broker/shards/shard_runtime.ts";
import { assert, rethrowBug } from "../runtime/assert.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import { DueHeap } from "../runtime/cooperation/due_looks.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Rng } from "../runtime/rng.ts";
import { CoordinatedPartition } from "./coordinated_partition.ts";
import { internalAppendRefusal, ledPartitionRefusal, waitForLoad } from "../broker/internal_topic.ts";
import { writeGroupsCheckpoint } from "./coordinator_appends.ts";
import { stepGroup } from "./core/group_core.ts";
import { joinRefusal, syncRefusal } from "./core/group_draft.ts";
import type {
  GroupAnswer,
  GroupError,
  GroupEvent,
  HeartbeatEvent,
  JoinAnswer,
  JoinEvent,
  LeaveEvent,
  SyncAnswer,
  SyncEvent,
} from "./core/group_events.ts";
import { emptyGroup, groupDueMs, type GroupSettings } from "./core/group_state.ts";
import type { OffsetsLog } from "./offsets/offsets_log.ts";
import { storedGroupOf } from "./offsets/stored_group.ts";

/** How often the coordinator looks at which offsets partitions this node leads (clock ms). */
export const leadershipLookIntervalMs = 200;
/** After a load that failed, how long before it is tried again (clock ms). */
export const loadRetryMs = 5000;
/** Groups one tick steps because time alone changed them (sessions, deadlines); the rest wait a tick. */
export const dueGroupsPerTickMax = 256;

/** The coordinator's limits (`[groups]`). */
export interface GroupCoordinatorSettings {
  group: GroupSettings;
  groupsMax: number;
  offsetsPerGroupMax: number;
  offsetMetadataBytesMax: number;
  checkpointBytes: number;
}

export interface GroupCoordinatorDeps {
  log: OffsetsLog;
  clock: Clock;
  logger: Logger;
  /** Member ids' random part. */
  rng: Rng;
  settings: GroupCoordinatorSettings;
  /** The partitions of a topic of the Kafka stream, or null when it does not exist. */
  topicPartitions(topic: string): number | null;
}

/** A join as JoinGroup carries it, before the coordinator gives it a request id and a new member id. */
export type JoinRequest = Omit<JoinEvent, "kind" | "requestId" | "generatedMemberId"> & { groupId: string };
export type SyncRequest = Omit<SyncEvent, "kind" | "requestId"> & { groupId: string };
export type HeartbeatRequest = Omit<HeartbeatEvent, "kind" | "requestId"> & { groupId: string };
export type LeaveRequest = Omit<LeaveEvent, "kind" | "requestId"> & { groupId: string };
export type LeaveAnswer = Extract<GroupAnswer, { kind: "leave" }>;

/** The partition of `__consumer_offsets` that holds a group, by a stable hash of its id. */
export function offsetsPartitionOf(groupId: string, partitions: number): number {
  assert(partitions >= 1, "the offsets topic has partitions");
  return fnv1a32(groupId) % partitions;
}

interface Waiter {
  resolve(answer: GroupAnswer): void;
  partition: CoordinatedPartition;
  refusal(error: GroupError): GroupAnswer;
}

/** Where a group's requests go: its loaded partition, or why they cannot be served here. */
export type GroupRoute = { partition: CoordinatedPartition; error: null } | {
  partition: null;
  error: GroupError;
};

/**
 * Kafka's group coordinator for the groups whose `__consumer_offsets` partitions this node leads:
 * the shell around the pure group steps (`group_core.ts`). It loads a partition's groups and
 * offsets when it comes to lead it and drops them when it stops; it gives each request an id and
 * answers it when a step's effects say so; it writes a group's metadata when a step asks, and steps
 * groups whose deadlines pass from the pump's tick (a due-time heap, not a sweep of every group).
 * The offsets' operations are in `group_offsets.ts`.
 */
export class GroupCoordinator {
  readonly #deps: GroupCoordinatorDeps;
  readonly #partitions = new Map<number, CoordinatedPartition>();
  readonly #waiting = new Map<number, Waiter>();
  /** Each group with a deadline, by the time it is due; groups are unique across partitions. */
  readonly #due = new DueHeap<string>();
  #nextRequestId = 1;
  #nextLeadershipLookMs = -Infinity;
  #ensuring: Promise<void> | null = null;
  #closed = false;

  constructor(deps: GroupCoordinatorDeps) {
    this.#deps = deps;
  }

  get deps(): GroupCoordinatorDeps {
    return this.#deps;
  }

  /** The offsets partition of a group, or null while the topic does not exist. */
  partitionOf(groupId: string): number | null {
    const count = this.#deps.log.partitionCount();
    return count === null ? null : offsetsPartitionOf(groupId, count);
  }

  /**
   * Creates `__consumer_offsets` when it does not exist yet (one creation at a time) and looks at
   * once at which of its partitions this node leads, so that their groups start loading.
   */
  ensureOffsetsTopic(): Promise<void> {
    if (this.#ensuring === null) {
      this.#ensuring = this.#deps.log.ensure().then(() => {
        this.#nextLeadershipLookMs = -Infinity;
        this.onTick(this.#deps.clock.nowMs());
      }).finally(() => {
        this.#ensuring = null;
      });
    }
    return this.#ensuring;
  }

  /**
   * Resolves once the group's partition is loaded here, or the load failed, or this node does not
   * lead it, or `timeoutMs` passed: FindCoordinator waits so, so that a client's first JoinGroup
   * after the topic's creation or a failover finds its group loaded.
   */
  async whenLoaded(groupId: string, timeoutMs: number): Promise<void> {
    if (this.route(groupId).error !== "coordinator_load_in_progress") return;
    this.#nextLeadershipLookMs = -Infinity;
    this.onTick(this.#deps.clock.nowMs());
    const p = this.#partitions.get(this.partitionOf(groupId)!);
    if (p === undefined || p.status !== "loading") return;
    await waitForLoad(this.#deps.clock, p.loadSettled, timeoutMs);
  }

  /** The loaded partitions this node leads. */
  loadedPartitions(): CoordinatedPartition[] {
    return [...this.#partitions.values()].filter((p) => p.status === "loaded");
  }

  /** Where a group's requests are served, checked against this node's leadership now. */
  route(groupId: string): GroupRoute {
    if (this.#closed) return { partition: null, error: "coordinator_not_available" };
    if (groupId === "") return { partition: null, error: "invalid_group_id" };
    const index = this.partitionOf(groupId);
    if (index === null) return { partition: null, error: "coordinator_not_available" };
    return this.routeByIndex(index);
  }

  /** Partition `index` of `__consumer_offsets` when this node leads it and has it loaded, else why not. */
  routeByIndex(index: number): GroupRoute {
    const p = this.#partitions.get(index);
    const error = ledPartitionRefusal(this.#closed, this.#deps.log.leaderEpoch(index), p);
    return error === null ? { partition: p!, error: null } : { partition: null, error };
  }

  join({ groupId, ...request }: JoinRequest): Promise<JoinAnswer> {
    const refusal = (error: GroupError) => joinRefusal(error, request.memberId);
    const { rng } = this.#deps;
    const generatedMemberId = `${request.clientId || "member"}-${rng.hex64()}${rng.hex64()}`;
    return this.#request(groupId, { kind: "join", ...request, generatedMemberId }, refusal, true);
  }

  sync({ groupId, ...request }: SyncRequest): Promise<SyncAnswer> {
    return this.#request(groupId, { kind: "sync", ...request }, (e) => syncRefusal(e) as SyncAnswer);
  }

  async heartbeat({ groupId, ...request }: HeartbeatRequest): Promise<{ error: GroupError | null }> {
    const refusal = (error: GroupError) => ({ kind: "heartbeat" as const, error });
    const answer = await this.#request(groupId, { kind: "heartbeat", ...request }, refusal);
    return { error: answer.error };
  }

  leave({ groupId, ...request }: LeaveRequest): Promise<LeaveAnswer> {
    const refusal = (error: GroupError): LeaveAnswer => ({ kind: "leave", error, members: [] });
    return this.#request(groupId, { kind: "leave", ...request }, refusal);
  }

  /**
   * The commit check of OffsetCommit, as a step of the group (`stepGroup`'s `commit`): resolves with
   * the refusal, or null when the commit may be written. Creates the group of a standalone commit.
   */
  async checkCommit(
    p: CoordinatedPartition,
    groupId: string,
    commit: { memberId: string; groupInstanceId: string | null; generation: number },
  ): Promise<GroupError | null> {
    const refusal = (error: GroupError) => ({ kind: "commit" as const, error });
    const answer = await this.#request(groupId, { kind: "commit", ...commit }, refusal, true, p);
    return answer.error;
  }

  /**
   * Sends one request to its group's step and resolves with the answer its effects give it (at
   * once, or when the rebalance it waits for completes). A group that does not exist is created
   * only by a request that may create it (a join), within `groups_max`.
   */
  #request<A extends GroupAnswer>(
    groupId: string,
    event: DistributiveOmit<Exclude<GroupEvent, { kind: "tick" }>, "requestId">,
    refusal: (error: GroupError) => A,
    creates = false,
    routed: CoordinatedPartition | null = null,
  ): Promise<A> {
    const route = routed === null ? this.route(groupId) : { partition: routed, error: null };
    if (route.error !== null) return Promise.resolve(refusal(route.error));
    const p = route.partition;
    const fresh = !p.groups.has(groupId) && !p.offsets.has(groupId);
    if (fresh && creates && this.groupCount() >= this.#deps.settings.groupsMax) {
      this.#deps.logger.warn("group refused: groups_max reached", { group: groupId });
      return Promise.resolve(refusal("coordinator_not_available"));
    }
    const requestId = this.#nextRequestId++;
    const answered = new Promise<A>((resolve) => {
      this.#waiting.set(requestId, { resolve: resolve as (a: GroupAnswer) => void, partition: p, refusal });
    });
    this.step(p, groupId, { ...event, requestId } as GroupEvent);
    return answered;
  }

  /** Groups known (by metadata or committed offsets) on every loaded partition: counted when one would be new. */
  groupCount(): number {
    let n = 0;
    for (const p of this.#partitions.values()) n += p.groupIds().size;
    return n;
  }

  /**
   * One step of a group: its persist request queues the group's metadata, its answers go to their
   * waiting requests (once that write ended, when the step persisted: a member is told of an
   * assignment, a replacement or a leave only once a new coordinator would know it, as Kafka
   * answers SyncGroup), and its next deadline goes to the due heap. An empty group with no member
   * id given out and no committed offset is forgotten (its metadata's tombstone is queued).
   */
  step(p: CoordinatedPartition, groupId: string, event: GroupEvent): void {
    const nowMs = this.#deps.clock.nowMs();
    const state = p.groups.get(groupId) ?? emptyGroup(groupId, nowMs);
    const { state: next, effects } = stepGroup(state, event, nowMs, this.#deps.settings.group);
    p.groups.set(groupId, next);
    const forget = next.phase === "empty" && next.pendingMembers.size === 0 && !p.offsets.has(groupId);
    if (forget) {
      p.groups.delete(groupId);
      this.#due.remove(groupId);
    } else {
      this.#due.schedule(groupId, groupDueMs(next));
    }
    const persists = effects.some((e) => e.kind === "persist") && (!forget || state.generation > 0);
    const written = persists ? this.persist(p, groupId) : null;
    for (const effect of effects) {
      if (effect.kind !== "answer") continue;
      if (written === null) this.#answer(effect.requestId, effect.answer);
      else void written.then(() => this.#answerAfterWrite(effect.requestId, effect.answer));
    }
  }

  #answer(requestId: number, answer: GroupAnswer): void {
    const waiter = this.#waiting.get(requestId);
    assert(waiter !== undefined, `request ${requestId} is answered once`);
    this.#waiting.delete(requestId);
    waiter.resolve(answer);
  }

  /** An answer that waited for its step's write: unless the partition was unloaded meanwhile, which answered it. */
  #answerAfterWrite(requestId: number, answer: GroupAnswer): void {
    if (this.#waiting.has(requestId)) this.#answer(requestId, answer);
  }

  /**
   * Queues the group's metadata (as it is when the append runs; a tombstone when it is gone then).
   * Resolves once that write ended, written or not (a failure is logged here).
   */
  persist(p: CoordinatedPartition, groupId: string): Promise<void> {
    const queued = p.persistQueued.get(groupId);
    if (queued !== undefined) return queued;
    const write = async () => {
      p.persistQueued.delete(groupId);
      const state = p.groups.get(groupId);
      const value = state === undefined ? null : storedGroupOf(state);
      const appended = await this.#deps.log.append(p.index, [{ kind: "group", groupId, value }]);
      this.appended(p, appended.bytes);
    };
    const written = p.enqueue(write).catch((error) => {
      rethrowBug(error, this.#deps.logger, "writing a group's metadata threw; the process stops", {
        group: groupId,
      });
      // Refused before it ran (a full queue): the next step's persist queues another.
      if (p.persistQueued.get(groupId) === written) p.persistQueued.delete(groupId);
      this.#deps.logger.warn("group metadata not written", {
        group: groupId,
        partition: p.index,
        reason: internalAppendRefusal(error),
        error,
      });
    });
    p.persistQueued.set(groupId, written);
    return written;
  }

  /** Counts appended bytes, and queues a checkpoint once enough accumulated since the last. */
  appended(p: CoordinatedPartition, bytes: number): void {
    p.appendedBytes += bytes;
    const due = Math.max(this.#deps.settings.checkpointBytes, p.checkpointBytes);
    if (p.appendedBytes < due || p.checkpointQueued) return;
    p.checkpointQueued = true;
    p.enqueue(() => writeGroupsCheckpoint(this.#deps.log, p)).catch((error) => {
      rethrowBug(error, this.#deps.logger, "writing an offsets checkpoint threw; the process stops", {
        partition: p.index,
      });
      this.#deps.logger.warn("offsets checkpoint not written", { partition: p.index, error });
    }).finally(() => {
      p.checkpointQueued = false;
    });
  }

  /**
   * The tick: which offsets partitions this node leads (every `leadershipLookIntervalMs`), loading
   * those it came to lead and dropping those it lost; then the groups whose deadlines passed.
   */
  onTick(nowMs: number): void {
    if (this.#closed) return;
    if (nowMs >= this.#nextLeadershipLookMs) {
      this.#nextLeadershipLookMs = nowMs + leadershipLookIntervalMs;
      this.#lookAtLeadership(nowMs);
    }
    for (const groupId of this.#due.takeDue(nowMs, dueGroupsPerTickMax)) {
      const index = this.partitionOf(groupId);
      const p = index === null ? undefined : this.#partitions.get(index);
      if (p?.status === "loaded" && p.groups.has(groupId)) this.step(p, groupId, { kind: "tick" });
    }
  }

  #lookAtLeadership(nowMs: number): void {
    const count = this.#deps.log.partitionCount() ?? 0;
    for (let index = 0; index < count; index++) {
      const epoch = this.#deps.log.leaderEpoch(index);
      const held = this.#partitions.get(index);
      const retry = held?.status === "failed" && nowMs >= held.retryAtMs;
      if (held !== undefined && (held.leaderEpoch !== epoch || retry)) this.#unload(held);
      if (epoch !== null && (held === undefined || held.leaderEpoch !== epoch || retry)) {
        this.#load(index, epoch);
      }
    }
  }

  #load(index: number, epoch: number): void {
    const p = new CoordinatedPartition(index, epoch, this.#deps.settings.offsetsPerGroupMax);
    this.#partitions.set(index, p);
    this.#deps.logger.info("loading offsets partition", { partition: index, leader_epoch: epoch });
    this.#deps.log.replay(index, (record) => p.replayed(record)).then((replayed) => {
      if (this.#partitions.get(index) !== p) return;
      p.loaded(this.#deps.clock.nowMs());
      for (const [groupId, state] of p.groups) this.#due.schedule(groupId, groupDueMs(state));
      this.appended(p, replayed.bytes);
      this.#deps.logger.info("offsets partition loaded", { partition: index, groups: p.groups.size });
    }).catch((error) => {
      rethrowBug(error, this.#deps.logger, "loading an offsets partition threw; the process stops", {
        partition: index,
      });
      if (this.#partitions.get(index) !== p) return;
      p.failed(this.#deps.clock.nowMs() + loadRetryMs);
      this.#deps.logger.error("offsets partition not loaded", { partition: index, error });
    });
  }

  /** Stops coordinating a partition's groups: every request they had waiting is told NOT_COORDINATOR. */
  #unload(p: CoordinatedPartition, error: GroupError = "not_coordinator"): void {
    this.#partitions.delete(p.index);
    for (const groupId of p.groups.keys()) this.#due.remove(groupId);
    for (const [requestId, waiter] of this.#waiting) {
      if (waiter.partition !== p) continue;
      this.#waiting.delete(requestId);
      waiter.resolve(waiter.refusal(error));
    }
    this.#deps.logger.info("offsets partition unloaded", { partition: p.index });
  }

  /** Stops: every waiting request is answered COORDINATOR_NOT_AVAILABLE; queued appends finish. */
  async close(): Promise<void> {
    this.#closed = true;
    const partitions = [...this.#partitions.values()];
    for (const p of partitions) this.#unload(p, "coordinator_not_available");
    await Promise.all(partitions.map((p) => p.settled()));
  }
}

/** `Omit` over each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
