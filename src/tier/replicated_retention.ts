import { rethrowBug } from "../runtime/assert.ts";
import type { AdvanceDeletedUpTo } from "../log/retention/floor_state.ts";
import type { Logger } from "../runtime/logger.ts";
import type { ControlLog } from "./control/control_log.ts";
import type { TieredPartition } from "./tier_service.ts";

/** Pause before a watermark whose commit failed is submitted again. */
export const deletedCommitRetryMs = 1000;

export interface ReplicatedRetentionDeps {
  logger: Logger;
  /** True in a cluster: the partitions have replicas that follow their leader's retention. */
  clustered: boolean;
  partition(key: string): TieredPartition | undefined;
  /** The leader epoch this node leads the partition under, or undefined when it does not lead it. */
  termOf(key: string): number | undefined;
  control(): ControlLog | null;
}

/**
 * Total retention of tiered partitions across replicas (docs/DESIGN.md, "Tiering across
 * replicas"): the leader alone decides it by the topic's limits, then commits the watermark it
 * deleted below to the control log under its leader epoch; every replica applies a committed
 * watermark by deleting its own segments below it. A commit that fails is tried again after
 * `deletedCommitRetryMs`, at most one waiting per partition. On a single node retention decides
 * everywhere and nothing is committed: the superblock is the record.
 */
export class ReplicatedRetention {
  readonly #deps: ReplicatedRetentionDeps;
  /** Partitions whose watermark waits for a commit, with when it is next tried. */
  readonly #waiting = new Map<string, number>();
  #submitting = new Set<string>();

  constructor(deps: ReplicatedRetentionDeps) {
    this.#deps = deps;
  }

  /** Whether total retention by the topic's limits runs on this node for the partition. */
  decidesHere(key: string): boolean {
    return !this.#deps.clustered || this.#deps.termOf(key) !== undefined;
  }

  /** This node's retention deleted segments of the partition: its replicas are to follow. */
  deleted(key: string, nowMs: number): void {
    if (!this.#deps.clustered) return;
    this.#waiting.set(key, nowMs);
  }

  /** Submits the watermarks that are due, one submission per partition at a time. */
  onTick(nowMs: number): void {
    for (const [key, dueAtMs] of this.#waiting) {
      if (dueAtMs > nowMs || this.#submitting.has(key)) continue;
      this.#waiting.delete(key);
      this.#submit(key, nowMs);
    }
  }

  /** A committed watermark: this replica deletes its segments below it. */
  async apply(command: AdvanceDeletedUpTo): Promise<void> {
    const p = this.#deps.partition(command.partition);
    if (p === undefined) return;
    const outcome = await p.partition.applyDeletedUpTo(command);
    if (outcome === "rejected_generation") {
      this.#deps.logger.warn("deleted watermark of another purge generation ignored", {
        partition: command.partition,
        up_to_offset: command.upToOffset,
      });
    }
  }

  forget(key: string): void {
    this.#waiting.delete(key);
  }

  #submit(key: string, nowMs: number): void {
    const p = this.#deps.partition(key);
    const expectedEpoch = this.#deps.termOf(key);
    const control = this.#deps.control();
    // No longer led here: the new leader decides from now on.
    if (p === undefined || expectedEpoch === undefined) return;
    if (control === null) {
      this.#waiting.set(key, nowMs + deletedCommitRetryMs);
      return;
    }
    const sb = p.partition.superblock;
    const command: AdvanceDeletedUpTo = {
      kind: "advance_deleted_up_to",
      partition: key,
      purgeGeneration: sb.purgeGeneration,
      upToOffset: sb.deletedUpToOffset,
    };
    this.#submitting.add(key);
    control.submit(command, { expectedEpoch }).catch((error) => {
      rethrowBug(error, this.#deps.logger, "committing the deleted watermark threw; the process stops", {
        partition: key,
      });
      this.#deps.logger.warn("Cannot commit the deleted watermark; trying again", { partition: key, error });
      if (!this.#waiting.has(key)) this.#waiting.set(key, nowMs + deletedCommitRetryMs);
    }).finally(() => this.#submitting.delete(key));
  }
}
