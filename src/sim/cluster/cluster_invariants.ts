/**
 * The cluster run's invariants, as pure functions of what was seen: each returns null when it
 * holds, or what broke it. `cluster_checks.ts` gathers the inputs from the world.
 */

/** A segment as the invariants see it; `endOffset` is inclusive. */
export interface SegmentView {
  startOffset: number;
  endOffset: number;
  location: "local" | "uploaded" | "remote";
}

/** An acknowledgement names one value per offset: a second, different one means a write was lost. */
export function acknowledgedOnce(
  acked: ReadonlyMap<number, string>,
  offset: number,
  value: string,
): string | null {
  const before = acked.get(offset);
  return before === undefined || before === value
    ? null
    : `offset ${offset} was acknowledged twice, as ${before} and as ${value}`;
}

/** At most one node's writes are acknowledged under one leader epoch. */
export function oneLeaderPerEpoch(
  ackedLeaderOf: ReadonlyMap<number, number>,
  leaderEpoch: number,
  nodeId: number,
): string | null {
  const before = ackedLeaderOf.get(leaderEpoch);
  return before === undefined || before === nodeId
    ? null
    : `under leader epoch ${leaderEpoch} writes were acknowledged by node ${before} and by node ${nodeId}`;
}

/** The high watermark never goes back within a leader epoch. */
export function highWatermarkMonotone(
  highWatermarkOf: ReadonlyMap<number, number>,
  leaderEpoch: number,
  highWatermark: number,
): string | null {
  const before = highWatermarkOf.get(leaderEpoch);
  return before === undefined || highWatermark >= before
    ? null
    : `under leader epoch ${leaderEpoch} the high watermark went back from ${before} to ${highWatermark}`;
}

/**
 * A leader's last stable offset never goes back within its leader epoch, and never passes its high
 * watermark: a read_committed consumer never loses what it was allowed to read.
 */
export function lastStableOffsetMonotone(
  lastStableOffsetOf: ReadonlyMap<number, number>,
  leaderEpoch: number,
  lastStableOffset: number,
  highWatermark: number,
): string | null {
  if (lastStableOffset > highWatermark) {
    return `under leader epoch ${leaderEpoch} the last stable offset ${lastStableOffset} is above the high watermark ${highWatermark}`;
  }
  const before = lastStableOffsetOf.get(leaderEpoch);
  return before === undefined || lastStableOffset >= before
    ? null
    : `under leader epoch ${leaderEpoch} the last stable offset went back from ${before} to ${lastStableOffset}`;
}

/** The committed floor never goes back (purges are refused in a cluster, so one generation holds). */
export function floorMonotone(seenFloor: number, committedFloor: number): string | null {
  return committedFloor >= seenFloor
    ? null
    : `the committed floor went back from ${seenFloor} to ${committedFloor}`;
}

/** The floor covers committed records only: never above the highest high watermark a leader reached. */
export function floorCommitted(committedFloor: number, highWatermarkMax: number): string | null {
  return committedFloor <= highWatermarkMax
    ? null
    : `the committed floor ${committedFloor} is above every high watermark (${highWatermarkMax})`;
}

/**
 * A replica evicts only below the committed floor: its own floor is at most the committed one, and
 * every segment it holds only remotely ends below its own floor.
 */
export function evictedBelowFloor(
  nodeId: number,
  segments: readonly SegmentView[],
  nodeFloor: number,
  committedFloor: number,
): string | null {
  if (nodeFloor > committedFloor) {
    return `node ${nodeId}'s floor ${nodeFloor} is above the committed floor ${committedFloor}`;
  }
  const above = segments.find((s) => s.location === "remote" && s.endOffset >= nodeFloor);
  return above === undefined
    ? null
    : `node ${nodeId} evicted segment ${above.startOffset}..${above.endOffset}, not below its floor ${nodeFloor}`;
}

/**
 * The floor is never above what the bucket holds: the `.log` objects of the incarnation cover every
 * offset from the deleted watermark to the floor, one after another.
 */
export function floorBacked(
  committedFloor: number,
  deletedUpTo: number,
  objects: readonly { startOffset: number; endOffset: number }[],
): string | null {
  const byStart = new Map(objects.map((o) => [o.startOffset, o.endOffset]));
  const startsBelow = objects.map((o) => o.startOffset).filter((start) => start <= deletedUpTo);
  let next = startsBelow.length === 0 ? deletedUpTo : Math.max(...startsBelow);
  const hops = objects.length + 1;
  for (let i = 0; i < hops && next < committedFloor; i++) {
    const end = byStart.get(next);
    if (end === undefined) {
      return `the committed floor ${committedFloor} is above the bucket: no object starts at ${next}`;
    }
    next = end + 1;
  }
  return next >= committedFloor
    ? null
    : `the committed floor ${committedFloor} is above the bucket's ${next}`;
}

/**
 * Every replica's chain stays readable: each segment it holds only remotely, ending at or above the
 * deleted watermark, has its `.log` object in the bucket. The objects a merge replaced go only once
 * every replica took its replace, so a chain never names one of them once gone.
 */
export function remoteChainBacked(
  node: number,
  segments: readonly {
    startOffset: number;
    endOffset: number;
    location: string;
    mergedEndOffset: number | null;
  }[],
  deletedUpTo: number,
  objects: readonly { startOffset: number; endOffset: number; merged: boolean }[],
): string | null {
  const stored = new Set(objects.map((o) => `${o.startOffset}-${o.merged ? o.endOffset : ""}`));
  const missing = segments.find((s) =>
    s.location === "remote" && s.endOffset >= deletedUpTo &&
    !stored.has(`${s.startOffset}-${s.mergedEndOffset ?? ""}`)
  );
  return missing === undefined
    ? null
    : `node ${node}'s remote segment ${missing.startOffset}..${missing.endOffset} has no object in the bucket`;
}

/** Every acknowledged value reads back at its offset. */
export function acknowledgedPresent(
  acked: ReadonlyMap<number, string>,
  read: ReadonlyMap<number, string>,
): string | null {
  for (const [offset, value] of acked) {
    const got = read.get(offset);
    if (got !== value) return `acknowledged ${value} at offset ${offset} reads back as ${got ?? "nothing"}`;
  }
  return null;
}

/**
 * No value is in the log twice: the plain produces are never sent again, and the idempotent
 * producer's retries of a batch the log holds are answered with its offset, not appended.
 */
export function noValueTwice(read: ReadonlyMap<number, string>): string | null {
  const seenAt = new Map<string, number>();
  for (const [offset, value] of read) {
    const before = seenAt.get(value);
    if (before !== undefined) return `${value} is in the log twice, at offsets ${before} and ${offset}`;
    seenAt.set(value, offset);
  }
  return null;
}

/** A sealed segment as stored by one replica (or the bucket). */
export interface StoredSegment {
  holder: string;
  startOffset: number;
  bytes: Uint8Array;
}

/** Sealed segments that start at the same offset hold the same bytes, on every replica and in the bucket. */
export function sealedIdentical(segments: readonly StoredSegment[]): string | null {
  const first = new Map<number, StoredSegment>();
  for (const s of segments) {
    const other = first.get(s.startOffset);
    if (other === undefined) {
      first.set(s.startOffset, s);
      continue;
    }
    if (!sameBytes(other.bytes, s.bytes)) {
      return `segment ${s.startOffset} differs between ${other.holder} (${other.bytes.length} bytes) ` +
        `and ${s.holder} (${s.bytes.length} bytes)`;
    }
  }
  return null;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * After GC's window the bucket holds the live incarnation's segments only: no object of another
 * incarnation, and none of this one at an offset where the leader's log starts no segment.
 */
export function noOrphans(
  objects: readonly { key: string; incarnation: string; startOffset: number; endOffset: number }[],
  liveIncarnation: string,
  chain: readonly { startOffset: number; endOffset: number; merged: boolean }[],
): string | null {
  const starts = new Set(chain.map((s) => s.startOffset));
  const first = chain[0]?.startOffset ?? 0;
  // Kept: a segment's object, or one within a merged segment (what it replaced, which followers
  // may hold), or another replica's merge that reaches past the retention watermark.
  const kept = (o: { startOffset: number; endOffset: number }) =>
    starts.has(o.startOffset) || o.startOffset < first && o.endOffset >= first ||
    chain.some((s) => s.merged && s.startOffset <= o.startOffset && o.endOffset <= s.endOffset);
  const orphan = objects.find((o) => o.incarnation !== liveIncarnation || !kept(o));
  return orphan === undefined ? null : `${orphan.key} is an orphan after GC's window`;
}

/**
 * A merge's object holds the bytes of the segments it replaced, end to end, where the bucket still
 * holds every one of them.
 */
export function mergesIdentical(
  merges: readonly StoredSegment[],
  segments: readonly (StoredSegment & { endOffset: number })[],
  mergeEnds: ReadonlyMap<StoredSegment, number>,
): string | null {
  const byStart = new Map(segments.map((s) => [s.startOffset, s]));
  for (const m of merges) {
    const parts: Uint8Array[] = [];
    let next = m.startOffset;
    const end = mergeEnds.get(m)!;
    // Each pass moves past one segment: bounded by the segments.
    for (let s = byStart.get(next); s !== undefined && next <= end; s = byStart.get(next)) {
      parts.push(s.bytes);
      next = s.endOffset + 1;
    }
    if (next !== end + 1) continue;
    if (!sameBytes(concat(parts), m.bytes)) {
      return `the merge of ${m.startOffset} to ${end} (${m.bytes.length} bytes) is not the segments it replaced`;
    }
  }
  return null;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Whether a value is a transactional producer's (`TransactionalSimProducer`: "t{transaction}.{batch}"). */
export function isTransactional(value: string): boolean {
  return value.startsWith("t");
}

/**
 * A read_committed read-back holds no record of an aborted transaction nor of one whose end is not
 * known, and every record of every committed transaction: each transaction is seen whole or not
 * at all.
 */
export function atomicallyVisible(
  outcomes: ReadonlyMap<string, "commit" | "abort">,
  readCommitted: ReadonlyMap<number, string>,
): string | null {
  const seen = new Set<string>();
  for (const [offset, value] of readCommitted) {
    if (!isTransactional(value)) continue;
    const outcome = outcomes.get(value);
    if (outcome !== "commit") {
      return `read_committed read ${value} at offset ${offset}, of a transaction ${
        outcome === "abort" ? "aborted" : "not ended"
      }`;
    }
    seen.add(value);
  }
  for (const [value, outcome] of outcomes) {
    if (outcome === "commit" && !seen.has(value)) {
      return `read_committed missed ${value} of a committed transaction`;
    }
  }
  return null;
}
