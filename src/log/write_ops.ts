import type { Disk } from "../runtime/disk.ts";
import type { LogConfig } from "./log_config.ts";
import type { MarkerIdentity } from "./remote_marker.ts";
import type { AppendInput, AppendResult, SegmentChain } from "./segment_chain.ts";
import { deleteFront, purgeSegments } from "./segment_deletion.ts";
import { evictSegments } from "./segment_eviction.ts";
import { truncateSegments } from "./segment_truncation.ts";
import type { EpochStart } from "./leader_epochs.ts";
import { plantRemoteSegments } from "./remote_planting.ts";
import type { RemoteMarker } from "./remote_marker.ts";
import type { RetentionDecision } from "./total_retention.ts";
import type { Deferred } from "./write_queue.ts";

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
      const evicted = await evictSegments(disk, dir, chain.segments, op.victims, op.floor, op.identity);
      return () => op.done.resolve(evicted);
    }
    case "purge": {
      await purgeSegments(disk, dir, chain);
      await op.commit();
      return () => op.done.resolve();
    }
  }
}
