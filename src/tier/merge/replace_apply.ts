import { rethrowBug } from "../../runtime/assert.ts";
import type { Partition } from "../../log/partition/partition.ts";
import type { ReplaceDecision, ReplaceRemoteSegments } from "../../log/segment/segment_replacement.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ControlLog } from "../control/control_log.ts";
import type { TierMetrics } from "../tier_metrics.ts";
import { WaitingReplaces } from "./waiting_replaces.ts";

/**
 * A committed replace of remote segments (a merge) applied to its partition: the chain takes it,
 * puts it off (`wait`: the caller tries again), or rejects it when it no longer holds the range (a
 * warning; the replacing objects stay in the store until retention's watermark passes them).
 * Counted and logged; returns the chain's decision.
 */
export async function applyReplace(
  partition: Partition,
  command: ReplaceRemoteSegments,
  logger: Logger,
  metrics: TierMetrics | undefined,
): Promise<ReplaceDecision> {
  const decision = await partition.replaceRemote(command);
  const m = command.markers;
  const fields = {
    partition: command.partition,
    start_offset: m[0]!.startOffset,
    end_offset: m.at(-1)!.endOffset,
  };
  if (decision.kind === "rejected") {
    logger.warn("replace of remote segments rejected", { ...fields, reason: decision.reason });
  } else if (decision.kind === "replace") {
    metrics?.segmentsReplaced.inc(decision.count);
    logger.info("remote segments replaced", { ...fields, replaced: decision.count, by: m.length });
  }
  return decision;
}

export interface CommittedReplacesDeps {
  logger: Logger;
  metrics?: TierMetrics;
  /** The shard's partition of that key, if it hosts it. */
  partition(key: string): Partition | undefined;
  /**
   * In a cluster, told that this replica's chain took a committed replace of the partition from
   * `startOffset`, or no longer holds its range (`ReplaceAcks`).
   */
  taken?(partition: string, startOffset: number): void;
}

/**
 * How a shard's tier service applies the committed replaces (docs/DESIGN.md, "The adjacent-segment
 * merger"): each to its partition's chain; one the chain puts off (a follower whose copies are
 * still local, or whose floor is behind) waits and is tried again from the tick; one it took, or
 * whose range retention passed, is told as taken.
 */
export class CommittedReplaces {
  readonly #deps: CommittedReplacesDeps;
  readonly #waiting = new WaitingReplaces();

  constructor(deps: CommittedReplacesDeps) {
    this.#deps = deps;
  }

  /** Replaces waiting for their chain. */
  get waiting(): number {
    return this.#waiting.count;
  }

  async apply(command: ReplaceRemoteSegments): Promise<void> {
    const partition = this.#deps.partition(command.partition);
    if (partition === undefined) return;
    const decision = await applyReplace(partition, command, this.#deps.logger, this.#deps.metrics);
    const start = command.markers[0]!.startOffset;
    if (decision.kind === "wait") this.#wait(command);
    else if (decision.kind !== "rejected" || partition.log.firstOffset > start) {
      this.#deps.taken?.(command.partition, start);
    }
  }

  /** A partition added after the replay (a new or rebuilt replica) takes the replaces committed before it. */
  applyCommittedTo(log: ControlLog, key: string): void {
    const { logger } = this.#deps;
    log.committedReplaces?.(key).then(async (commands) => {
      for (const command of commands) await this.apply(command);
    }).catch((error) => {
      rethrowBug(error, logger, "applying a partition's committed replaces threw; the process stops", {
        partition: key,
      });
      // Its chain keeps the segments those merges replaced, whose objects then stay in the store.
      logger.warn("Cannot read a partition's committed replaces", { partition: key, error });
    });
  }

  /** The tick: the replaces waiting are tried again, once a second. */
  onTick(nowMs: number): void {
    const { logger } = this.#deps;
    for (const command of this.#waiting.takeDue(nowMs)) {
      this.apply(command).catch((error) => {
        rethrowBug(error, logger, "applying a replace threw; the process stops", {
          partition: command.partition,
        });
        logger.error("replace not applied; trying again", { partition: command.partition, error });
        this.#wait(command);
      });
    }
  }

  forget(key: string): void {
    this.#waiting.forget(key);
  }

  #wait(command: ReplaceRemoteSegments): void {
    const dropped = this.#waiting.add(command);
    if (dropped === null) return;
    this.#deps.logger.warn(
      "too many replaces waiting: one is dropped; its replica keeps the segments it replaced",
      {
        partition: dropped.partition,
        start_offset: dropped.markers[0]!.startOffset,
      },
    );
  }
}
