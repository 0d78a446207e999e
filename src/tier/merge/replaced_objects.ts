import type { Partition } from "../../log/partition/partition.ts";
import { objectStem, segmentStem } from "../../log/segment/segment.ts";
import type { Segment } from "../../log/segment/segment.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import { keysPerRequestMax } from "../../objectstore/object_store.ts";
import type { Logger } from "../../runtime/logger.ts";
import {
  clusterRoot,
  incarnationPrefix,
  parseObjectKey,
  type PartitionIncarnation,
} from "../bucket/object_keys.ts";

/** Keys found replaced and waiting for their grace, at most, per shard; past it, later ones wait for a later look. */
export const replacedKeysMax = 10_000;
/** Merged segments remembered as holding no replaced key; past it the memory starts over (a listing each again). */
const clearedMergesMax = 100_000;
/** Listing pages one merged segment's range takes at most in one look: its replaced segments are at most 256. */
const pagesPerMergeMax = 2;

/**
 * In a cluster, which replicas took each replace (the acks in etcd, `ReplaceAcks`): the objects a
 * merge replaced go only once every replica's chain took it, and the replace is then removed.
 */
export interface ReplaceTakers {
  takenByAll(label: string, startOffset: number): Promise<boolean>;
  settle(label: string, startOffset: number): Promise<void>;
  settleBelow(label: string, firstOffset: number): Promise<number>;
}

export interface ReplacedObjectsDeps {
  store: DeadlineObjectStore;
  clock: { nowMs(): number };
  logger: Logger;
  deleteGraceMs: number;
  /** Counts each object deleted. */
  deleted(count: number): void;
  /** In a cluster: which replicas took each replace. Absent on a single node, whose chain is the only one. */
  takers?: ReplaceTakers;
}

/** The store requests a look may still make: the housekeeping run's budget. */
export interface Requests {
  readonly left: number;
  take(requests?: number): void;
}

/**
 * The objects of segments a merge replaced (docs/DESIGN.md, "The adjacent-segment merger"): a
 * merged segment's range, listed, holds its own two objects and those of the segments it replaced
 * (and of an earlier, smaller merge), which nothing reads once every reader in flight is done. Each
 * such key is deleted once `delete_grace` has passed since this shard first found it replaced, by
 * its own clock, so a read that resolved the key before the replace never meets a missing object.
 * In a cluster a merged segment's range is looked at only once every replica took its replace, and
 * the replace is removed from etcd once its range is found clear. What it found is memory only:
 * after a restart a key waits a whole grace again.
 */
export class ReplacedObjects {
  readonly #firstSeenMs = new Map<string, number>();
  readonly #cleared = new Set<string>();
  /** In a cluster, each partition's first offset when its replaces retention passed were last removed. */
  readonly #settledBelow = new Map<string, number>();

  /** Keys found replaced, waiting for their grace. */
  get pending(): number {
    return this.#firstSeenMs.size;
  }

  /**
   * Looks at the partition's merged remote segments, within `requests`, and deletes the replaced
   * keys whose grace has passed. An incarnation a restored topic reads is left alone: its markers
   * may name the replaced objects.
   */
  async sweep(
    deps: ReplacedObjectsDeps,
    partition: Partition,
    incarnation: PartitionIncarnation,
    requests: Requests,
  ): Promise<void> {
    const prefix = incarnationPrefix(incarnation);
    const root = clusterRoot(incarnation.prefix, incarnation.clusterId);
    const due: string[] = [];
    const label = partition.log.label;
    await this.#settleBelow(deps, label, partition.log.firstOffset, requests);
    for (const merged of partition.log.segments) {
      if (merged.location !== "remote") break;
      if (merged.mergedEndOffset === null) continue;
      const id = `${prefix}${objectStem(merged.startOffset, merged.mergedEndOffset)}`;
      if (this.#cleared.has(id)) continue;
      if (requests.left < pagesPerMergeMax + 2) break;
      if (deps.takers !== undefined) {
        requests.take(1);
        if (!await deps.takers.takenByAll(label, merged.startOffset)) continue;
      }
      const replaced = await replacedKeysOf(deps.store, root, prefix, merged, requests);
      if (replaced.length === 0) {
        await deps.takers?.settle(label, merged.startOffset);
        this.#remember(id);
      }
      for (const key of replaced) {
        const firstSeenMs = this.#firstSeenMs.get(key) ?? this.#note(key, deps.clock.nowMs());
        if (firstSeenMs !== null && deps.clock.nowMs() - firstSeenMs >= deps.deleteGraceMs) due.push(key);
      }
    }
    await this.#delete(deps, label, due, requests);
  }

  /** In a cluster, once the partition's first offset moved: removes the replaces retention passed. */
  async #settleBelow(deps: ReplacedObjectsDeps, label: string, firstOffset: number, requests: Requests) {
    if (deps.takers === undefined || this.#settledBelow.get(label) === firstOffset) return;
    requests.take(1);
    await deps.takers.settleBelow(label, firstOffset);
    if (this.#settledBelow.size >= clearedMergesMax) this.#settledBelow.clear();
    this.#settledBelow.set(label, firstOffset);
  }

  /** Notes a key found replaced now; null when the bound is reached (a later look finds it again). */
  #note(key: string, nowMs: number): number | null {
    if (this.#firstSeenMs.size >= replacedKeysMax) return null;
    this.#firstSeenMs.set(key, nowMs);
    return nowMs;
  }

  #remember(id: string): void {
    if (this.#cleared.size >= clearedMergesMax) this.#cleared.clear();
    this.#cleared.add(id);
  }

  async #delete(deps: ReplacedObjectsDeps, label: string, keys: string[], requests: Requests): Promise<void> {
    for (let from = 0; from < keys.length && requests.left > 0; from += keysPerRequestMax) {
      requests.take(1);
      const results = await deps.store.delete(keys.slice(from, from + keysPerRequestMax));
      const failed = results.filter((r) => r.error !== null);
      for (const r of results) if (r.error === null) this.#firstSeenMs.delete(r.key);
      deps.deleted(results.length - failed.length);
      if (failed.length > 0) {
        deps.logger.warn("replaced objects not deleted; tried again at a later look", {
          partition: label,
          keys: failed.length,
          error: failed[0]!.error,
        });
      }
    }
  }
}

/**
 * The keys within a merged segment's range but its own two: those of the segments it replaced. A
 * listing from its start offset's stem on, stopping at the first key past its end offset.
 */
async function replacedKeysOf(
  store: DeadlineObjectStore,
  root: string,
  prefix: string,
  merged: Segment,
  requests: Requests,
): Promise<string[]> {
  const found: string[] = [];
  let after: string | null = `${prefix}${segmentStem(merged.startOffset)}`;
  for (let page = 0; page < pagesPerMergeMax && after !== null; page++) {
    requests.take(1);
    const listed = await store.list(prefix, { startAfter: after });
    after = listed.nextStartAfter;
    for (const o of listed.objects) {
      const key = parseObjectKey(root, o.key);
      if (key.kind !== "segment") continue;
      if (key.startOffset > merged.endOffset) return found;
      const own = key.startOffset === merged.startOffset && key.mergedEndOffset === merged.mergedEndOffset;
      if (!own) found.push(o.key);
    }
  }
  return found;
}
