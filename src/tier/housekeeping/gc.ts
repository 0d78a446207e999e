import { labelOf, type PartitionAddress } from "../../log/partition/partition.ts";
import type {
  BodySource,
  DeleteResult,
  ListOptions,
  ListPage,
  PutOptions,
} from "../../objectstore/object_store.ts";
import { assert } from "../../runtime/assert.ts";
import {
  classifyObject,
  type IncarnationTable,
  isGarbage,
  type ObjectClass,
  objectClasses,
} from "../bucket/object_class.ts";
import {
  deadMarkBody,
  deadMarkKey,
  incarnationIdOf,
  incarnationOfKey,
  type ParsedObjectKey,
  parseObjectKey,
} from "../bucket/object_keys.ts";

/** The store operations GC needs; the retrying store and every backend have them. */
export interface GcStore {
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  delete(keys: readonly string[]): Promise<DeleteResult[]>;
  put(key: string, body: BodySource, options: PutOptions): Promise<unknown>;
}

export type GcMode = "dry-run" | "delete";

export interface GcOptions {
  store: GcStore;
  /** `{prefix}/{cluster}/`: the listing's root. */
  root: string;
  mode: GcMode;
  deleteGraceMs: number;
  wallNowMs: () => number;
  /**
   * Reads what the metadata knows about these addresses. Called after each page is listed, so the
   * table is never older than the objects it judges.
   */
  readTable: (addresses: PartitionAddress[]) => Promise<IncarnationTable>;
  /** Called after each page with the running count of listed objects. */
  progress?: (listedObjects: number) => void;
  /** Bound on pages, so a run always ends; 1000 keys per page. */
  pagesMax?: number;
}

export interface GcClassCount {
  objects: number;
  bytes: number;
}

export interface GcReport {
  mode: GcMode;
  root: string;
  listedObjects: number;
  classes: Record<ObjectClass, GcClassCount>;
  deletedObjects: number;
  deletedBytes: number;
  deleteFailures: { key: string; error: string }[];
  /** Dead marks put before the first delete of an incarnation's objects (`deadMarkKey`). */
  deadMarksPut: number;
  /**
   * Garbage kept for a later run: the manifests and dead marks of incarnations whose data this run
   * listed (they go once none of it is left).
   */
  deferredObjects: number;
  /** True when `pagesMax` stopped the listing before its end. */
  truncated: boolean;
}

const deleteFailuresKeptMax = 100;

/**
 * The GC command's work (docs/DESIGN.md, "Garbage classes"): lists the cluster's root page by page,
 * classifies each object against the metadata read after that page, counts every class, and in
 * `delete` mode deletes the garbage classes. Objects younger than `deleteGraceMs` are `in_grace`
 * and are never deleted; unrecognized keys are never deleted either.
 */
export async function runGc(o: GcOptions): Promise<GcReport> {
  const report: GcReport = {
    mode: o.mode,
    root: o.root,
    listedObjects: 0,
    classes: Object.fromEntries(objectClasses.map((c) => [c, { objects: 0, bytes: 0 }])) as Record<
      ObjectClass,
      GcClassCount
    >,
    deletedObjects: 0,
    deletedBytes: 0,
    deleteFailures: [],
    deadMarksPut: 0,
    deferredObjects: 0,
    truncated: false,
  };
  const marks = new DeadMarks(o, report);
  const pagesMax = o.pagesMax ?? 10_000_000;
  let startAfter: string | undefined;
  for (let page = 0; page < pagesMax; page++) {
    const listed = await o.store.list(o.root, startAfter === undefined ? {} : { startAfter });
    const parsed = listed.objects.map((obj) => ({ obj, parsed: parseObjectKey(o.root, obj.key) }));
    const table = await o.readTable(addressesOf(parsed.map((p) => p.parsed)));
    const now = o.wallNowMs();
    const doomed: { key: string; sizeBytes: number }[] = [];
    for (const { obj, parsed: key } of parsed) {
      const c = classifyObject(key, obj.lastModifiedMs, table, now, o.deleteGraceMs);
      report.classes[c].objects++;
      report.classes[c].bytes += obj.sizeBytes;
      if (marks.mayDelete(key, c)) doomed.push(obj);
    }
    report.listedObjects += listed.objects.length;
    if (o.mode === "delete" && doomed.length > 0) {
      await marks.putMissing();
      await deleteAll(o.store, doomed, report);
    }
    o.progress?.(report.listedObjects);
    if (listed.nextStartAfter === null) return report;
    assert(startAfter === undefined || listed.nextStartAfter > startAfter, "GC listing must move forward");
    startAfter = listed.nextStartAfter;
  }
  report.truncated = true;
  return report;
}

async function deleteAll(store: GcStore, doomed: { key: string; sizeBytes: number }[], report: GcReport) {
  const sizes = new Map(doomed.map((d) => [d.key, d.sizeBytes]));
  for (const result of await store.delete(doomed.map((d) => d.key))) {
    if (result.error === null) {
      report.deletedObjects++;
      report.deletedBytes += sizes.get(result.key) ?? 0;
    } else if (report.deleteFailures.length < deleteFailuresKeptMax) {
      report.deleteFailures.push({ key: result.key, error: result.error.message });
    }
  }
}

/**
 * The GC run's dead marks: an incarnation's objects are deleted only once its mark is stored (put
 * before the page's deletes), and its manifest and mark only in a run that lists none of its data.
 */
class DeadMarks {
  readonly #o: GcOptions;
  readonly #report: GcReport;
  readonly #marked = new Set<string>();
  readonly #dataListed = new Set<string>();
  readonly #missing = new Map<string, string>();

  constructor(o: GcOptions, report: GcReport) {
    this.#o = o;
    this.#report = report;
  }

  /**
   * Whether a listed object of class `c` goes now: garbage, and for a dead incarnation's manifest or
   * mark, none of its data listed this run. Notes the mark a dead incarnation's data needs first.
   */
  mayDelete(key: ParsedObjectKey, c: ObjectClass): boolean {
    if (key.kind === "unrecognized" || key.kind === "topic_manifest") return isGarbage(c);
    const id = incarnationIdOf(key);
    if (key.kind === "dead_mark") this.#marked.add(id);
    if (key.kind === "segment") this.#dataListed.add(id);
    // Retention's deletions below a live incarnation's watermark need no mark.
    if (!isGarbage(c) || c === "below_deleted_watermark") return isGarbage(c);
    if (key.kind === "segment") {
      if (!this.#marked.has(id)) this.#missing.set(id, deadMarkKey(incarnationOfKey(this.#o.root, key)));
      return true;
    }
    if (!this.#dataListed.has(id)) return true;
    this.#report.deferredObjects++;
    return false;
  }

  /** Puts the marks this page's deletes need (a failure throws: nothing of it is deleted then). */
  async putMissing(): Promise<void> {
    for (const [id, key] of this.#missing) {
      await this.#o.store.put(key, async function* () {
        yield deadMarkBody;
      }, { sizeBytes: deadMarkBody.length, metadata: {}, ifAbsent: false });
      this.#marked.add(id);
      this.#report.deadMarksPut++;
    }
    this.#missing.clear();
  }
}

function addressesOf(keys: ParsedObjectKey[]): PartitionAddress[] {
  const seen = new Map<string, PartitionAddress>();
  for (const k of keys) {
    if (k.kind === "unrecognized") continue;
    seen.set(labelOf(k.address), k.address);
  }
  return [...seen.values()];
}

/** The report as a fixed-width table: one line per class, then the totals. */
export function formatGcTable(r: GcReport): string {
  const lines = [`${"class".padEnd(24)}${"objects".padStart(12)}${"bytes".padStart(16)}`];
  for (const c of objectClasses) {
    lines.push(
      `${c.padEnd(24)}${String(r.classes[c].objects).padStart(12)}${String(r.classes[c].bytes).padStart(16)}`,
    );
  }
  lines.push(`${"listed".padEnd(24)}${String(r.listedObjects).padStart(12)}`);
  lines.push(
    r.mode === "delete"
      ? `${"deleted".padEnd(24)}${String(r.deletedObjects).padStart(12)}${
        String(r.deletedBytes).padStart(16)
      }`
      : "dry run: nothing deleted (--mode delete deletes the garbage classes)",
  );
  if (r.deadMarksPut > 0) lines.push(`dead marks put: ${r.deadMarksPut}`);
  if (r.deferredObjects > 0) {
    lines.push(`deferred: ${r.deferredObjects} manifests and dead marks, deleted by a run after their data`);
  }
  if (r.deleteFailures.length > 0) lines.push(`delete failures: ${r.deleteFailures.length}`);
  if (r.truncated) lines.push("the listing stopped at its page bound before the end of the prefix");
  return lines.join("\n");
}

/** The report as JSON, class counts under their names. */
export function gcJson(r: GcReport): Record<string, unknown> {
  return {
    mode: r.mode,
    root: r.root,
    listed_objects: r.listedObjects,
    classes: r.classes,
    deleted_objects: r.deletedObjects,
    deleted_bytes: r.deletedBytes,
    delete_failures: r.deleteFailures,
    dead_marks_put: r.deadMarksPut,
    deferred_objects: r.deferredObjects,
    truncated: r.truncated,
  };
}
