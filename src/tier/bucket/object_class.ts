import { labelOf } from "../../log/partition/partition.ts";
import { incarnationIdOf, type ParsedObjectKey } from "./object_keys.ts";

/**
 * What the metadata says about one partition address, read after the listing it judges: the
 * partition's current incarnation, or "unreadable" when the metadata names the partition but its
 * superblock could not be read (its objects are then kept, whatever they look like).
 */
export type KnownPartition =
  | { createdRevision: string; purgeGeneration: number; deletedUpToOffset: number }
  | "unreadable";

/**
 * What the metadata knows, read after the listing it judges: by "{stream}/{topic}/{partition}",
 * each partition's current incarnation (an address it lacks no longer exists); and the incarnations
 * restored topics still read their oldest segments from (`incarnationIdOf`; docs/DESIGN.md,
 * "Restore"), live whatever their own partitions became. A `Map` of the partitions is a table.
 */
export interface IncarnationTable {
  get(label: string): KnownPartition | undefined;
  readonly referenced?: ReadonlySet<string>;
}

/**
 * The classes of garbage and of what is kept (docs/DESIGN.md, "Garbage classes"):
 * - `live`: part of a partition's current incarnation, at or above its retention watermark;
 * - `below_deleted_watermark`: current incarnation, but total retention deleted every offset in it;
 * - `stale_generation`: the partition exists under the same revision but was purged since;
 * - `unknown_incarnation`: its stream, topic or partition was deleted, or its data directory wiped
 *   (the partition was recreated under a new revision); for a topic manifest, its topic was deleted;
 * - `in_grace`: would be garbage, but is younger than `delete_grace`;
 * - `unrecognized`: not a key this layout writes; never deleted.
 */
export type ObjectClass =
  | "live"
  | "below_deleted_watermark"
  | "stale_generation"
  | "unknown_incarnation"
  | "in_grace"
  | "unrecognized";

export const objectClasses: readonly ObjectClass[] = [
  "live",
  "below_deleted_watermark",
  "stale_generation",
  "unknown_incarnation",
  "in_grace",
  "unrecognized",
];

/** The classes whose objects may be deleted. */
export function isGarbage(c: ObjectClass): boolean {
  return c === "below_deleted_watermark" || c === "stale_generation" || c === "unknown_incarnation";
}

/**
 * Classifies one listed object. Safe against stale metadata as long as `table` was read after the
 * listing: revisions, generations and watermarks only ever increase, so an old reading can make
 * garbage look live, never live data look like garbage. A generation above the one known, which
 * only a table older than the listing could show, reads as live.
 */
export function classifyObject(
  parsed: ParsedObjectKey,
  lastModifiedMs: number,
  table: IncarnationTable,
  wallNowMs: number,
  deleteGraceMs: number,
): ObjectClass {
  const garbage = garbageClass(parsed, table);
  if (garbage === "live" || garbage === "unrecognized") return garbage;
  return wallNowMs - lastModifiedMs < deleteGraceMs ? "in_grace" : garbage;
}

function garbageClass(parsed: ParsedObjectKey, table: IncarnationTable): ObjectClass {
  if (parsed.kind === "unrecognized") return "unrecognized";
  if (parsed.kind !== "topic_manifest" && table.referenced?.has(incarnationIdOf(parsed))) return "live";
  const known = table.get(labelOf(parsed.address));
  if (known === undefined) return "unknown_incarnation";
  // A topic manifest belongs to the topic, whatever incarnation its partition 0 is in.
  if (parsed.kind === "topic_manifest") return "live";
  if (known === "unreadable") return "live";
  if (known.createdRevision !== parsed.createdRevision) return "unknown_incarnation";
  if (parsed.purgeGeneration < known.purgeGeneration) return "stale_generation";
  if (parsed.purgeGeneration > known.purgeGeneration) return "live";
  // The watermark is the first offset of the first segment retention kept: a segment that starts
  // below it lies wholly below it, but for a merge's object, whose key names its end (in a cluster,
  // another replica's merge may reach past the watermark).
  if (parsed.kind === "segment" && (parsed.mergedEndOffset ?? parsed.startOffset) < known.deletedUpToOffset) {
    return "below_deleted_watermark";
  }
  return "live";
}
