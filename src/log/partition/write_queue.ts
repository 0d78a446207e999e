import { readTxnMarker } from "../batch/txn_marker.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { groupOpsMax, type LogConfig } from "../log_config.ts";
import type { MarkerIdentity, RemoteMarker } from "../remote/remote_marker.ts";
import type { AppendInput, AppendResult, SegmentChain } from "../segment/segment_chain.ts";
import { deleteFront, purgeSegments } from "../segment/segment_deletion.ts";
import { evictSegments } from "../segment/segment_eviction.ts";
import { truncateSegments } from "../segment/segment_truncation.ts";
import { type ReplaceDecision, replaceRemoteSegments } from "../segment/segment_replacement.ts";
import type { EpochStart } from "./leader_epochs.ts";
import { plantRemoteSegments } from "../remote/remote_planting.ts";
import type { RetentionDecision } from "../retention/total_retention.ts";
import { assert } from "../../runtime/assert.ts";
import { PartitionUnavailableError, WriteQueueFullError } from "../log_errors.ts";

/** The changes of a partition's log, each run in its writer loop, in order. */
export type WriteOp =
  | { kind: "append"; input: AppendInput; done: Deferred<AppendResult> }
  | { kind: "roll"; done: Deferred<void> }
  | { kind: "sync"; done: Deferred<void> }
  | { kind: "retention"; decide: RetentionDecision; done: Deferred<number> }
  | { kind: "purge"; commit: () => Promise<void>; done: Deferred<void> }
  | { kind: "truncate"; offset: number; done: Deferred<void> }
  | { kind: "plant"; markers: readonly RemoteMarker[]; epochs: readonly EpochStart[]; done: Deferred<void> }
  | {
    kind: "replace";
    markers: readonly RemoteMarker[];
    identity: MarkerIdentity;
    done: Deferred<ReplaceDecision>;
  }
  | {
    kind: "evict";
    victims: Map<number, number>;
    floor: number;
    identity: MarkerIdentity;
    done: Deferred<number>;
  };

/** What the writer loop's operations work on. */
export interface WriteContext {
  disk: Disk;
  dir: string;
  chain: SegmentChain;
  config(): LogConfig;
  /** Fails the writer loop: every queued and later operation is refused. */
  fail(error: Error): void;
}

/** Runs one operation in the writer loop; returns its acknowledgement, called once it is durable. */
export async function applyWriteOp(context: WriteContext, op: WriteOp): Promise<() => void> {
  const { disk, dir, chain } = context;
  if (op.kind !== "append") await chain.flushPending();
  switch (op.kind) {
    case "append": {
      // A client's batches are judged against its producer's state first: a retry is answered with
      // the offsets it was given, a refusal appends nothing; either once the group before it is durable.
      if (op.input.kind === "batches") {
        const batches = op.input.batches;
        const plan = chain.producers.plan(
          batches.map((b) => b.header),
          chain.pendingNextOffset,
          (i) => readTxnMarker(batches[i]!.bytes)?.coordinatorEpoch ?? null,
        );
        chain.producers.counted(plan);
        if (plan.kind === "refused") return () => op.done.reject(plan.error);
        if (plan.kind === "duplicate") {
          const duplicate = { baseOffset: plan.firstOffset, count: plan.lastOffset - plan.firstOffset + 1 };
          return () => op.done.resolve(duplicate);
        }
      }
      const result = await chain.append(op.input, context.config());
      // A new leader epoch's start is durable before anything written under it is acknowledged.
      await chain.epochs.persist();
      return () => op.done.resolve(result);
    }
    case "truncate": {
      await truncateSegments(disk, dir, chain, op.offset);
      return () => op.done.resolve();
    }
    case "plant": {
      await plantRemoteSegments(disk, dir, chain, op.markers, op.epochs);
      return () => op.done.resolve();
    }
    case "roll": {
      if (!chain.active.isEmpty) await chain.roll();
      return () => op.done.resolve();
    }
    case "sync": {
      chain.startBackgroundSync((error) => context.fail(error));
      return () => op.done.resolve();
    }
    case "retention": {
      const deleted = await deleteFront(disk, dir, chain, op.decide);
      return () => op.done.resolve(deleted);
    }
    case "evict": {
      const evicted = await evictSegments(
        disk,
        dir,
        chain.segments,
        chain.remoteTable,
        op.victims,
        op.floor,
        op.identity,
      );
      return () => op.done.resolve(evicted);
    }
    case "replace": {
      const decision = await replaceRemoteSegments(disk, dir, chain, op.markers, op.identity);
      return () => op.done.resolve(decision);
    }
    case "purge": {
      await purgeSegments(disk, dir, chain);
      await op.commit();
      return () => op.done.resolve();
    }
  }
}

export interface Deferred<T> {
  resolve: (value: T) => void;
  reject: (error: Error) => void;
}

/** An operation of the queue: what it is, and how its caller hears the result. */
export interface QueuedOp {
  kind: string;
  // deno-lint-ignore no-explicit-any
  done: Deferred<any>;
}

/** How the queue runs a group: each operation, then one write, one fsync and one publish for all. */
export interface GroupCommit<Op extends QueuedOp> {
  /** Runs one operation; returns its acknowledgement, called once the whole group is visible. */
  apply(op: Op): Promise<() => void>;
  /** Writes what the group's operations left pending. */
  flush(): Promise<void>;
  /** Whether the group must be fsynced before it is acknowledged (the "always" policy). */
  syncDue(): boolean;
  sync(): Promise<void>;
  /** Makes the group's writes visible to readers. */
  publish(): void;
  /** Told once, of the first failure, after which the queue refuses every operation. */
  stopped(error: Error): void;
}

/**
 * A partition's write queue. Every change goes through one writer loop, which takes up to
 * `groupOpsMax` queued operations at a time, runs them, makes them durable with one fsync when the
 * policy asks for it (group commit), and only then makes them visible and acknowledges them. The
 * queue is bounded; after a failed write every queued and later operation is refused.
 */
export class WriteQueue<Op extends QueuedOp> {
  readonly #label: string;
  readonly #queueMax: () => number;
  readonly #commit: GroupCommit<Op>;
  #queue: Op[] = [];
  #running: Promise<void> | null = null;
  #failure: Error | null = null;
  #closed = false;

  /**
   * `queueMax` is read at each enqueue, and checked at each group: it may rise at run time, never fall
   * below what is queued (the server's is a fixed setting).
   */
  constructor(label: string, queueMax: () => number, commit: GroupCommit<Op>) {
    this.#label = label;
    this.#queueMax = queueMax;
    this.#commit = commit;
  }

  /** The first write failure, after which the log serves no more writes; null while healthy. */
  get failure(): Error | null {
    return this.#failure;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Records a failure from outside the loop (the background fsync); the first one is kept. */
  fail(error: Error): void {
    this.#stop(error);
  }

  /** The first failure stops the queue for good, and the commit hears of it once. */
  #stop(error: Error): void {
    if (this.#failure !== null) return;
    this.#failure = error;
    this.#commit.stopped(error);
  }

  /** Whether an operation of this kind is queued and not yet taken. */
  has(kind: Op["kind"]): boolean {
    return this.#queue.some((op) => op.kind === kind);
  }

  enqueue<T>(make: (done: Deferred<T>) => Op): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new PartitionUnavailableError(this.#label, "the log is closed"));
    }
    if (this.#failure !== null) {
      return Promise.reject(
        new PartitionUnavailableError(this.#label, `an earlier write failed (${this.#failure.message})`, {
          cause: this.#failure,
        }),
      );
    }
    const queueMax = this.#queueMax();
    if (this.#queue.length >= queueMax) return Promise.reject(new WriteQueueFullError(this.#label, queueMax));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make({ resolve, reject }));
      this.#kick();
    });
  }

  /** Refuses later operations; returns the running writer loop, if any, for the caller to await. */
  close(): Promise<void> | null {
    this.#closed = true;
    return this.#running;
  }

  /**
   * Starts the writer unless it runs. When a drain ends, anything queued in the moment between its
   * last look at the queue and its end starts a new one: without that, an append made in that
   * window would wait forever.
   */
  #kick(): void {
    if (this.#running !== null) return;
    this.#running = this.#drain().finally(() => {
      this.#running = null;
      if (this.#queue.length > 0 && this.#failure === null) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    // Each pass takes at least one queued operation, so the queue's bound bounds the loop.
    while (this.#queue.length > 0 && this.#failure === null) {
      // Once a group, never once an operation: the hot path pays nothing for it.
      assert(this.#queue.length <= this.#queueMax(), "the write queue holds no more than its bound");
      await this.#processGroup(this.#queue.splice(0, groupOpsMax));
    }
    // A failure recorded from outside the loop (the background fsync) leaves operations queued
    // that no writer will take: they are refused, never left waiting.
    if (this.#failure !== null) this.#refuseQueued(this.#failure);
    assert(this.#queue.length === 0, "a writer loop ends with nothing queued");
  }

  #refuseQueued(failure: Error): void {
    const refused = new PartitionUnavailableError(
      this.#label,
      `an earlier write failed (${failure.message})`,
      {
        cause: failure,
      },
    );
    for (const op of this.#queue.splice(0)) op.done.reject(refused);
  }

  async #processGroup(group: Op[]): Promise<void> {
    const acks: (() => void)[] = [];
    try {
      for (const op of group) acks.push(await this.#commit.apply(op));
      await this.#commit.flush();
      if (this.#commit.syncDue()) await this.#commit.sync();
      this.#commit.publish();
      for (const ack of acks) ack();
    } catch (cause) {
      const error = cause instanceof Error ? cause : new Error(String(cause), { cause });
      this.#stop(error);
      const failed = new PartitionUnavailableError(this.#label, `write failed: ${error.message}`, {
        cause: error,
      });
      for (const op of [...group, ...this.#queue.splice(0)]) op.done.reject(failed);
    }
  }
}
