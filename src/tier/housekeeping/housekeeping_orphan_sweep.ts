import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import type { ListPage } from "../../objectstore/object_store.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { RequestBudget } from "./housekeeping_budget.ts";
import type { JobOutcome } from "./housekeeping_core.ts";
import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";
import { classifyObject, type IncarnationTable } from "../bucket/object_class.ts";
import {
  afterIncarnation,
  clusterRoot,
  deadMarkBody,
  deadMarkKey,
  incarnationIdOf,
  incarnationOfKey,
  type ParsedObjectKey,
  parseObjectKey,
} from "../bucket/object_keys.ts";

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
  /** Orphans first seen, and found gone, at least a grace ago, each with its incarnation's id. */
  doomed: { key: string; incarnation: string }[];
  /** Dead incarnations found without their dead mark: the keys to put, by incarnation id. */
  unmarked: Map<string, string>;
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
  /** Dead incarnations (`incarnationIdOf`) whose dead mark is known to be in the store. */
  #marked = new Set<string>();
  /**
   * Dead incarnations with a data object this sweep listed, deleted or not: their manifest and dead
   * mark, which the listing reaches after their data (`meta/` sorts after the stream ids), wait for
   * a sweep that lists none of it.
   */
  #dataListedThisSweep = new Set<string>();

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
      this.#dataListedThisSweep.clear();
    }
    for (let page = 0; page < listingPagesMax; page++) {
      if (budget.left < 2) return { kind: "orphan_sweep", nextAfter: startAfter ?? null };
      budget.take();
      const listed = await this.#deps.store.list(root, startAfter === undefined ? {} : { startAfter });
      const { doomed, unmarked, skipAfter } = this.#judge(root, listed);
      await this.#putDeadMarks(unmarked, budget);
      if (doomed.length > 0) await this.#delete(doomed, budget);
      if (listed.nextStartAfter === null) break;
      startAfter = skipAfter ?? listed.nextStartAfter;
    }
    this.#forgetUnseen();
    return { kind: "orphan_sweep", nextAfter: null };
  }

  /**
   * Which objects of a page are orphans old enough to delete, which dead incarnations still need
   * their dead mark, and whether to skip a live incarnation. Nothing of an incarnation is deleted
   * before its dead mark is known to be stored; its manifest and mark only once none of its data
   * was left this sweep.
   */
  #judge(root: string, listed: ListPage): PageVerdict {
    const { deleteGraceMs } = this.#deps.config;
    const table = this.#deps.incarnations.incarnationTable();
    const nowMs = this.#deps.clock.nowMs();
    const wallMs = this.#deps.clock.wallMs();
    const verdict: PageVerdict = { doomed: [], unmarked: new Map(), skipAfter: null };
    for (const obj of listed.objects) {
      const key = parseObjectKey(root, obj.key);
      if (key.kind === "unrecognized") continue;
      // Age is left out here (Infinity ago): whether the incarnation is gone is the question.
      const c = classifyObject(key, -Infinity, table, wallMs, deleteGraceMs);
      if (c !== "stale_generation" && c !== "unknown_incarnation") {
        verdict.skipAfter = afterIncarnation(key.incarnationPrefix);
        continue;
      }
      verdict.skipAfter = null;
      this.#deps.metrics?.orphansFound.inc();
      const since = this.#deadSince.get(key.incarnationPrefix) ??
        this.#markDead(key.incarnationPrefix, nowMs);
      this.#deadSeenThisSweep.add(key.incarnationPrefix);
      const seen = this.#seenAt(obj.key, nowMs);
      const old = since !== null && nowMs - since >= deleteGraceMs && seen !== null &&
        nowMs - seen >= deleteGraceMs;
      const doomed = key.kind === "topic_manifest"
        ? old
        : this.#judgeIncarnationObject(root, key, old, verdict);
      if (doomed) verdict.doomed.push({ key: obj.key, incarnation: incarnationIdOf(key) });
    }
    return verdict;
  }

  /** Whether an old orphan of a dead incarnation goes now; notes its mark and what of it is left. */
  #judgeIncarnationObject(
    root: string,
    key: Extract<ParsedObjectKey, { kind: "segment" | "manifest" | "dead_mark" }>,
    old: boolean,
    verdict: PageVerdict,
  ): boolean {
    const id = incarnationIdOf(key);
    if (key.kind === "dead_mark") this.#marked.add(id);
    if (key.kind === "segment") this.#dataListedThisSweep.add(id);
    if (!this.#marked.has(id)) {
      verdict.unmarked.set(id, deadMarkKey(incarnationOfKey(root, key)));
      return false;
    }
    return old && (key.kind === "segment" || !this.#dataListedThisSweep.has(id));
  }

  /** Puts the dead marks a page found missing, as many as the budget allows beside the page's deletes. */
  async #putDeadMarks(unmarked: ReadonlyMap<string, string>, budget: RequestBudget): Promise<void> {
    for (const [id, key] of unmarked) {
      if (budget.left < 3) return;
      budget.take();
      await this.#deps.store.put(key, async function* () {
        yield deadMarkBody;
      }, { sizeBytes: deadMarkBody.length, metadata: {}, ifAbsent: false });
      this.#marked.add(id);
    }
  }

  /** Deletes a page's doomed orphans. */
  async #delete(
    doomed: readonly { key: string; incarnation: string }[],
    budget: RequestBudget,
  ): Promise<void> {
    budget.take(Math.ceil(doomed.length / 1000));
    const results = await this.#deps.store.delete(doomed.map((d) => d.key));
    const failed = new Set(results.filter((r) => r.error !== null).map((r) => r.key));
    for (const d of doomed) {
      // A dead mark gone: should the incarnation come back to the listing, it is marked again.
      if (!failed.has(d.key) && d.key.endsWith("/dead")) this.#marked.delete(d.incarnation);
    }
    this.#deps.metrics?.deletedObjects.inc({ reason: "orphan" }, results.length - failed.size);
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
