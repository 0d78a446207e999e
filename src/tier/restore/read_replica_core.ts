import { assert } from "../../runtime/assert.ts";
import type { ListedObject } from "../../objectstore/object_store.ts";
import type { ManifestSegment, PartitionManifest } from "../bucket/manifest.ts";
import { parseObjectKey } from "../bucket/object_keys.ts";

/**
 * What a read replica takes from its source's partition manifests at each poll (docs/DESIGN.md,
 * "Read replicas"), decided by pure functions over one listing of the source topic's `meta/` prefix
 * and the manifests read: which manifest to read (only one whose ETag changed), which of its
 * segments to plant, and below which offset the source's retention deleted. The shell
 * (`read_replica_follower.ts`) makes the requests and runs the plantings.
 */

/** An incarnation of the source partition: its objects' keys carry it. */
export interface SourceIncarnation {
  createdRevision: string;
  purgeGeneration: number;
}

/** A partition manifest of the source as the listing shows it, with whether a dead mark sits beside it. */
export interface ListedManifest extends SourceIncarnation {
  /** "" when only a dead mark was listed. */
  key: string;
  sizeBytes: number;
  etag: string | null;
  dead: boolean;
}

/** A read replica's partition as the follower sees it. */
export interface FollowedPartition {
  /** The source incarnation its segments are objects of; null while it has none. */
  incarnation: SourceIncarnation | null;
  /** Its log start and end (exclusive); equal when it holds no segment. */
  firstOffset: number;
  nextOffset: number;
  /** The ETag of the manifest it last read; null before the first. */
  etag: string | null;
}

export type ManifestChoice =
  /** Nothing to read: the manifest's ETag is the one read last, or the source has none yet. */
  | { kind: "unchanged" }
  | { kind: "read"; manifest: ListedManifest }
  /** The incarnation followed is dead or was purged: nothing of it changes any more. */
  | { kind: "ended"; reason: string };

/** What one manifest gives a partition. */
export interface FollowStep {
  /**
   * Segments to plant, oldest first, contiguous, continuing the partition (the first may start
   * within it: a merge that replaces the segments it covers); at most `plantMax`.
   */
  plant: ManifestSegment[];
  /** The source's retention deleted every offset below this: segments ending below it retire. */
  retireBelow: number | null;
  /** The manifest's segments do not continue the partition: the offset where they should have. */
  gapAt: number | null;
  /**
   * The source's merges of segments the partition holds, within its offsets: each replaces the
   * segments it covers (unless the partition holds it already), before the source deletes them.
   */
  replace: ManifestSegment[];
}

/** The source topic's partition manifests and dead marks in one listing of `{root}meta/{stream}/{topic}/`. */
export function manifestsByPartition(
  root: string,
  objects: readonly ListedObject[],
): Map<number, ListedManifest[]> {
  const found = new Map<string, ListedManifest & { partitionId: number }>();
  for (const o of objects) {
    const key = parseObjectKey(root, o.key);
    if (key.kind !== "manifest" && key.kind !== "dead_mark") continue;
    const id = `${key.address.partitionId}/${key.createdRevision}-${key.purgeGeneration}`;
    const entry = found.get(id) ?? {
      partitionId: key.address.partitionId,
      createdRevision: key.createdRevision,
      purgeGeneration: key.purgeGeneration,
      key: "",
      sizeBytes: 0,
      etag: null,
      dead: false,
    };
    if (key.kind === "dead_mark") entry.dead = true;
    else {
      entry.key = o.key;
      entry.sizeBytes = o.sizeBytes;
      entry.etag = o.etag ?? null;
    }
    found.set(id, entry);
  }
  const byPartition = new Map<number, ListedManifest[]>();
  for (const { partitionId, ...m } of found.values()) {
    byPartition.set(partitionId, [...(byPartition.get(partitionId) ?? []), m]);
  }
  return byPartition;
}

/**
 * The manifest to read: the followed incarnation's, only when its ETag changed (an unknown ETag
 * always reads); while the partition follows none, the source's newest live one. The followed
 * incarnation ends when it is marked dead or a newer purge generation of it exists.
 */
export function chooseManifest(view: FollowedPartition, listed: readonly ListedManifest[]): ManifestChoice {
  const withManifest = listed.filter((m) => m.key !== "");
  const followed = view.incarnation;
  if (followed === null) {
    const live = withManifest.filter((m) => !m.dead);
    if (live.length === 0) return { kind: "unchanged" };
    return { kind: "read", manifest: live.reduce((a, b) => (b.purgeGeneration > a.purgeGeneration ? b : a)) };
  }
  const same = (m: SourceIncarnation) =>
    m.createdRevision === followed.createdRevision && m.purgeGeneration === followed.purgeGeneration;
  const name = `${followed.createdRevision}-${followed.purgeGeneration}`;
  if (listed.some((m) => same(m) && m.dead)) {
    return { kind: "ended", reason: `the source's incarnation ${name} is marked dead` };
  }
  if (
    listed.some((m) =>
      m.createdRevision === followed.createdRevision && m.purgeGeneration > followed.purgeGeneration
    )
  ) {
    return { kind: "ended", reason: `the source partition was purged after incarnation ${name}` };
  }
  const manifest = withManifest.find(same);
  if (manifest === undefined) return { kind: "unchanged" };
  if (manifest.etag !== null && manifest.etag === view.etag) return { kind: "unchanged" };
  return { kind: "read", manifest };
}

/**
 * What a manifest gives the partition: its segments from the partition's end on (all of them,
 * from the first, while the partition holds none), contiguous, at most `plantMax`; and the
 * source's retention watermark when it passed the partition's log start. A segment of the manifest
 * that starts within the partition and ends at or past its end is a merge of segments the
 * partition holds and of newer ones (docs/DESIGN.md, "The adjacent-segment merger"): the planting
 * starts with it, and it replaces the partition's segments it covers.
 */
export function followManifest(
  view: FollowedPartition,
  manifest: PartitionManifest,
  plantMax: number,
): FollowStep {
  assert(plantMax > 0, "a planting takes at least one segment");
  const empty = view.firstOffset === view.nextOffset;
  const straddling = empty
    ? undefined
    : manifest.segments.find((s) =>
      s.startOffset >= view.firstOffset && s.startOffset < view.nextOffset && s.endOffset >= view.nextOffset
    );
  const from = straddling?.startOffset ?? view.nextOffset;
  const newer = manifest.segments
    .filter((s) => s.startOffset >= from)
    .sort((a, b) => a.startOffset - b.startOffset);
  const plant: ManifestSegment[] = [];
  let gapAt: number | null = null;
  let next = empty ? (newer[0]?.startOffset ?? view.nextOffset) : from;
  for (const s of newer) {
    if (plant.length === plantMax) break;
    if (s.startOffset !== next || s.endOffset < s.startOffset) {
      gapAt = next;
      break;
    }
    plant.push(s);
    next = s.endOffset + 1;
  }
  const retireBelow = !empty && manifest.deletedUpToOffset > view.firstOffset
    ? manifest.deletedUpToOffset
    : null;
  const replace = empty
    ? []
    : manifest.segments.filter((s) =>
      s.merged === true && s.startOffset >= view.firstOffset && s.endOffset < view.nextOffset
    );
  return { plant, retireBelow, gapAt, replace };
}
