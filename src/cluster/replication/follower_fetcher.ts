import { rethrowBug } from "../../runtime/assert.ts";
import { alignmentOf } from "./segment_alignment.ts";
import { labelOf, type Partition, type PartitionAddress } from "../../log/partition/partition.ts";
import { ReplicaAppendError } from "../../log/log_errors.ts";
import type { ProduceChecks } from "../../log/batch/produced_batches.ts";
import { concatBytes } from "../../runtime/memory/buffers.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ClusterView } from "../node/cluster_view.ts";
import type { LeaderLink, LeaderLinkFactory, ReplicaFetchPartitionResponse } from "./replica_fetch.ts";
import type { ReplicaManager, ReplicaRole } from "./replica_manager.ts";

export interface FollowerFetcherDeps {
  nodeId: number;
  view: ClusterView;
  replicas: ReplicaManager;
  links: LeaderLinkFactory;
  clock: Clock;
  logger: Logger;
  /** The turn each replicated append's checks take between pieces (the piece gate's). */
  checks: ProduceChecks;
  /** Hears the bytes of each answer appended: what this node copied from its leaders. */
  fetched?(bytes: number): void;
}

/** How long a leader may hold a replica fetch that finds nothing new. */
export const replicaFetchWaitMs = 500;
/** Bytes one replica fetch asks for at most. */
export const replicaFetchBytesMax = 8 * 1024 * 1024;
/** Longest pause before a fetch loop tries its leader again after a failure. */
const retryMaxMs = 1000;

interface FollowedPartition {
  partition: Partition;
  leaderEpoch: number;
}

/** One loop per leader node: fetches every partition this node follows from it, one request at a time. */
class LeaderLoop {
  readonly leaderId: number;
  readonly followed = new Map<string, FollowedPartition>();
  #link: LeaderLink | null = null;
  #running = false;
  #stopped = false;
  #failures = 0;

  constructor(leaderId: number, readonly deps: FollowerFetcherDeps) {
    this.leaderId = leaderId;
  }

  start(): void {
    if (this.#running || this.#stopped) return;
    this.#running = true;
    this.#run().finally(() => (this.#running = false));
  }

  stop(): void {
    this.#stopped = true;
    this.#link?.close();
    this.#link = null;
  }

  async #run(): Promise<void> {
    const { clock, logger } = this.deps;
    while (!this.#stopped && this.followed.size > 0) {
      try {
        await this.#fetchOnce();
        this.#failures = 0;
      } catch (error) {
        rethrowBug(error, logger, "a replica fetch threw; the process stops", { leader: this.leaderId });
        this.#failures++;
        this.#link?.close();
        this.#link = null;
        if (this.#failures === 1 || this.#failures % 20 === 0) {
          logger.warn("Cannot fetch from the leader; trying again", {
            leader: this.leaderId,
            error,
          });
        }
        await clock.sleep(Math.min(retryMaxMs, 20 * 2 ** Math.min(this.#failures, 6)));
      }
    }
  }

  async #fetchOnce(): Promise<void> {
    const link = this.#linkNow();
    const partitions = [...this.followed.values()].map((f) => ({
      address: f.partition.address,
      leaderEpoch: f.leaderEpoch,
      fetchOffset: f.partition.log.nextOffset,
      lastFetchedEpoch: f.partition.log.leaderEpochs.latestEpoch,
    }));
    const response = await link.fetch({
      replicaId: this.deps.nodeId,
      maxWaitMs: replicaFetchWaitMs,
      maxBytes: replicaFetchBytesMax,
      partitions,
    });
    if (response.error === "authentication") {
      throw new Error(`node ${this.leaderId} refused this node's credentials ([cluster] secret differs)`);
    }
    let waitForState = false;
    for (const answer of response.partitions) {
      const followed = this.followed.get(labelOf(answer.address));
      if (followed === undefined) continue;
      waitForState = (await this.#take(followed, answer)) || waitForState;
    }
    // A leader that refused every partition's epoch: pause until the view catches up.
    if (waitForState) await this.deps.clock.sleep(50);
  }

  /** Appends one partition's answer; true when the answer says the states disagree. */
  async #take(followed: FollowedPartition, answer: ReplicaFetchPartitionResponse): Promise<boolean> {
    const log = followed.partition.log;
    if (answer.divergingEpoch !== null) {
      await this.#truncate(followed, answer.divergingEpoch);
      return false;
    }
    if (answer.error !== "none") {
      if (answer.error === "offsetOutOfRange") {
        this.deps.logger.warn("the follower's log is past its leader's end", {
          partition: labelOf(answer.address),
          follower_end: log.nextOffset,
          leader_end: answer.logEndOffset,
        });
      }
      return true;
    }
    if (answer.records.length > 0 && await this.#realign(followed, answer.segmentStarts)) return false;
    if (answer.records.length > 0) {
      const bytes = answer.records.length === 1 ? answer.records[0]! : concatBytes(answer.records);
      try {
        await log.appendReplicated(bytes, new Set(answer.segmentStarts), this.deps.checks);
        this.deps.fetched?.(bytes.length);
      } catch (error) {
        if (!(error instanceof ReplicaAppendError)) throw error;
        this.deps.logger.warn("Cannot append the leader's batches", {
          partition: labelOf(answer.address),
          error,
        });
        return true;
      }
    }
    log.setHighWatermark(Math.min(answer.highWatermark, log.nextOffset));
    if (answer.logStartOffset > log.firstOffset) {
      await this.#trimToLeaderStart(followed, answer.logStartOffset);
    }
    return false;
  }

  /**
   * The leader's log starts later than the follower's (its retention, or a group coordinator's
   * checkpoint, deleted its first segments): the follower deletes its whole segments below that
   * start too, as Kafka's followers follow their leader's log start offset.
   */
  async #trimToLeaderStart(followed: FollowedPartition, logStartOffset: number): Promise<void> {
    const partition = followed.partition;
    await partition.applyDeletedUpTo({
      kind: "advance_deleted_up_to",
      partition: labelOf(partition.address),
      purgeGeneration: partition.superblock.purgeGeneration,
      upToOffset: Math.min(logStartOffset, partition.log.highWatermark),
    });
  }

  /**
   * Cuts the follower's log where it diverged from the leader's: at the leader's end of the epoch
   * it named, or lower where the follower's own records of that epoch end (KIP-279).
   */
  async #truncate(
    followed: FollowedPartition,
    diverging: { epoch: number; endOffset: number },
  ): Promise<void> {
    const log = followed.partition.log;
    const own = log.leaderEpochs.endOffsetFor(diverging.epoch, log.nextOffset);
    const target = Math.max(log.firstOffset, Math.min(diverging.endOffset, own.endOffset, log.nextOffset));
    const label = labelOf(followed.partition.address);
    if (target < log.highWatermark) {
      this.deps.logger.error(
        "truncating below the high watermark: the leader lacks records this replica had as committed",
        {
          partition: label,
          to: target,
          high_watermark: log.highWatermark,
        },
      );
    }
    this.deps.logger.info("truncating a diverged log", {
      partition: label,
      from: log.nextOffset,
      to: target,
      leader_epoch: diverging.epoch,
    });
    await log.truncateTo(target);
  }

  /**
   * The follower's empty active segment starts where the leader's log starts none: a boundary only
   * this replica made, as a leader deposed before a record followed it. The follower cuts back to
   * the start of the segment before it and fetches that again, so that its segments stay the
   * leader's (byte for byte, as every replica's and the bucket's must). True when it cut.
   */
  async #realign(followed: FollowedPartition, leaderStarts: readonly number[]): Promise<boolean> {
    const log = followed.partition.log;
    const alignment = alignmentOf(log.segments, log.nextOffset, leaderStarts);
    if (alignment.kind === "aligned") return false;
    const label = labelOf(followed.partition.address);
    if (alignment.kind === "stuck") {
      this.deps.logger.error("a segment boundary differs from the leader's below what can be cut", {
        partition: label,
        boundary: alignment.boundary,
      });
      return false;
    }
    this.deps.logger.info("re-fetching a segment whose end the leader does not share", {
      partition: label,
      from: alignment.offset,
    });
    await log.truncateTo(alignment.offset);
    return true;
  }

  #linkNow(): LeaderLink {
    if (this.#link !== null) return this.#link;
    const record = this.deps.view.node(this.leaderId);
    if (record === null) throw new Error(`node ${this.leaderId} is not registered`);
    this.#link = this.deps.links(this.leaderId, record.kafka);
    return this.#link;
  }
}

/**
 * The follower side of replication: every partition this node follows is fetched from its
 * leader by that leader's loop, which appends the batches byte for byte and takes the leader's
 * high watermark. Role changes (`ReplicaManager.onRoleChange`) move a partition between loops; a
 * loop with nothing left to fetch stops.
 */
export class FollowerFetcher {
  readonly #deps: FollowerFetcherDeps;
  readonly #loops = new Map<number, LeaderLoop>();
  #closed = false;

  constructor(deps: FollowerFetcherDeps) {
    this.#deps = deps;
    deps.replicas.onRoleChange((address, role) => this.#roleChanged(address, role));
  }

  /** Partitions followed, by leader, for checks. */
  followed(): Map<number, string[]> {
    return new Map([...this.#loops].map(([id, loop]) => [id, [...loop.followed.keys()]]));
  }

  close(): void {
    this.#closed = true;
    for (const loop of this.#loops.values()) loop.stop();
    this.#loops.clear();
  }

  #roleChanged(address: PartitionAddress, role: ReplicaRole): void {
    const label = labelOf(address);
    for (const [id, loop] of this.#loops) {
      if (role.kind === "follower" && role.leaderId === id) continue;
      loop.followed.delete(label);
      if (loop.followed.size === 0) {
        loop.stop();
        this.#loops.delete(id);
      }
    }
    if (role.kind !== "follower" || this.#closed) return;
    const partition = this.#deps.replicas.partition(address);
    if (partition === null) return;
    let loop = this.#loops.get(role.leaderId);
    if (loop === undefined) {
      loop = new LeaderLoop(role.leaderId, this.#deps);
      this.#loops.set(role.leaderId, loop);
    }
    loop.followed.set(label, { partition, leaderEpoch: role.leaderEpoch });
    loop.start();
  }
}
