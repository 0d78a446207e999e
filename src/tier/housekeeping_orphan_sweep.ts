import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import type { ListPage } from "../objectstore/object_store.ts";
import type { Clock } from "../runtime/clock.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { classifyObject, type IncarnationTable } from "./object_class.ts";
import { afterIncarnation, clusterRoot, parseObjectKey } from "./object_keys.ts";

/** Where the table of every partition of the cluster comes from (the broker's catalog). */
export interface IncarnationSource {
  /** The table as it is now: read after each listing page it judges. */
  incarnationTable(): IncarnationTable;
}

/** What the orphan sweep needs. */
export interface OrphanSweepDeps {
  store: DeadlineObjectStore;
  clock: Clock;
  config: { prefix: string; clusterId: string; deleteGraceMs: number };
  /** Every partition of the cluster. */
  incarnations: IncarnationSource;
  metrics?: HousekeepingMetrics;
}

/** Dead incarnations the orphan sweep remembers between two sweeps. */
const deadIncarnationsMax = 10_000;
/** Bound on the orphan objects whose first sighting is remembered; past it, a later sweep takes them. */
const orphanObjectsTrackedMax = 100_000;
/** Bound on the listing pages of one sweep job. */
const listingPagesMax = 1_000_000;

/** What one listing page of the sweep decided. */
interface PageVerdict {
  /** Orphans first seen, and found gone, at least a grace ago. */
  doomed: string[];
  /** Where the next listing starts when the page ended inside a live incarnation; null otherwise. */
  skipAfter: string | null;
}

/**
 * The orphan sweep of shard 0: lists the cluster's prefix and deletes the objects of incarnations
 * that no longer exist (stale generations, deleted or recreated partitions) once a sweep at least
 * `delete_grace` earlier found them gone, and only objects a sweep listed at least the grace ago
 * (by the server's clock, not the store's LastModified, which clock skew makes unreliable). A live
 * incarnation is skipped as a whole: the next listing starts after it. What it has seen is kept
 * from one sweep to the next, within bounds.
 */
export class OrphanSweep {
  readonly #deps: OrphanSweepDeps;
  /** Incarnation prefix → when a sweep first found it gone. */
  #deadSince = new Map<string, number>();
  #deadSeenThisSweep = new Set<string>();
  /**
   * When each orphan object was first listed, by the server's own clock. Its creation came before
   * that, so deleting it a grace after this sighting never deletes an object younger than the grace,
   * whatever the store's clock says (its LastModified can be an hour off either way).
   */
  #orphanSeenAt = new Map<string, number>();
  #orphansSeenThisSweep = new Set<string>();

  constructor(deps: OrphanSweepDeps) {
    this.#deps = deps;
  }

  /** Sweeps from `startAfterKey` (null: a new sweep from the start) until done or the budget is spent. */
  async run(startAfterKey: string | null, budget: RequestBudget): Promise<JobOutcome> {
    const root = clusterRoot(this.#deps.config.prefix, this.#deps.config.clusterId);
    let startAfter = startAfterKey ?? undefined;
    if (startAfter === undefined) {
      this.#deadSeenThisSweep.clear();
      this.#orphansSeenThisSweep.clear();
    }
    for (let page = 0; page < listingPagesMax; page++) {
      if (budget.left < 2) return { kind: "orphan_sweep", nextAfter: startAfter ?? null };
      budget.take();
      const listed = await this.#deps.store.list(root, startAfter === undefined ? {} : { startAfter });
      const { doomed, skipAfter } = this.#judge(root, listed);
      if (doomed.length > 0) {
        budget.take(Math.ceil(doomed.length / 1000));
        const results = await this.#deps.store.delete(doomed);
        this.#deps.metrics?.deletedObjects.inc(
          { reason: "orphan" },
          results.filter((r) => r.error === null).length,
        );
      }
      if (listed.nextStartAfter === null) break;
      startAfter = skipAfter ?? listed.nextStartAfter;
    }
    this.#forgetUnseen();
    return { kind: "orphan_sweep", nextAfter: null };
  }

  /** Which objects of a page are orphans old enough to delete, and whether to skip a live incarnation. */
  #judge(root: string, listed: ListPage): PageVerdict {
    const { deleteGraceMs } = this.#deps.config;
    const table = this.#deps.incarnations.incarnationTable();
    const nowMs = this.#deps.clock.nowMs();
    const wallMs = this.#deps.clock.wallMs();
    const doomed: string[] = [];
    let skipAfter: string | null = null;
    for (const obj of listed.objects) {
      const key = parseObjectKey(root, obj.key);
      if (key.kind === "unrecognized") continue;
      // Age is left out here (Infinity ago): whether the incarnation is gone is the question.
      const c = classifyObject(key, -Infinity, table, wallMs, deleteGraceMs);
      if (c !== "stale_generation" && c !== "unknown_incarnation") {
        skipAfter = afterIncarnation(key.incarnationPrefix);
        continue;
      }
      skipAfter = null;
      this.#deps.metrics?.orphansFound.inc();
      const since = this.#deadSince.get(key.incarnationPrefix) ??
        this.#markDead(key.incarnationPrefix, nowMs);
      this.#deadSeenThisSweep.add(key.incarnationPrefix);
      const seen = this.#seenAt(obj.key, nowMs);
      if (
        since !== null && nowMs - since >= deleteGraceMs && seen !== null && nowMs - seen >= deleteGraceMs
      ) {
        doomed.push(obj.key);
      }
    }
    return { doomed, skipAfter };
  }

  /** When an orphan object was first listed; null when the memory is full (a later sweep). */
  #seenAt(objectKey: string, nowMs: number): number | null {
    this.#orphansSeenThisSweep.add(objectKey);
    const known = this.#orphanSeenAt.get(objectKey);
    if (known !== undefined) return known;
    if (this.#orphanSeenAt.size >= orphanObjectsTrackedMax) return null;
    this.#orphanSeenAt.set(objectKey, nowMs);
    return nowMs;
  }

  /** Remembers when an incarnation was first found gone; null when the memory is full (a later sweep). */
  #markDead(prefixKey: string, nowMs: number): number | null {
    if (this.#deadSince.size >= deadIncarnationsMax) return null;
    this.#deadSince.set(prefixKey, nowMs);
    return nowMs;
  }

  /** A complete sweep forgets incarnations and objects it no longer found: they are gone. */
  #forgetUnseen(): void {
    for (const prefixKey of [...this.#deadSince.keys()]) {
      if (!this.#deadSeenThisSweep.has(prefixKey)) this.#deadSince.delete(prefixKey);
    }
    for (const objectKey of [...this.#orphanSeenAt.keys()]) {
      if (!this.#orphansSeenThisSweep.has(objectKey)) this.#orphanSeenAt.delete(objectKey);
    }
  }
}
