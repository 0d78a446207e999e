/**
 * The simulator's invariants, each a pure checker returning null when it holds or a sentence saying
 * how it is violated.
 */

export interface SegmentView {
  startOffset: number;
  endOffset: number;
  location: "local" | "uploaded" | "remote";
}

/** Every message read back is the one written at its offset: its payload is its offset's fill byte. */
export function readBackIntact(
  messages: readonly { offset: number; payload: Uint8Array | null }[],
): string | null {
  for (const m of messages) {
    const expected = m.offset & 0xff;
    if (m.payload === null || m.payload.length === 0 || !m.payload.every((b) => b === expected)) {
      return `message ${m.offset} read back with other bytes than were written`;
    }
  }
  for (let i = 1; i < messages.length; i++) {
    if (messages[i]!.offset !== messages[i - 1]!.offset + 1) {
      return `offsets are not dense: ${messages[i - 1]!.offset} then ${messages[i]!.offset}`;
    }
  }
  return null;
}

/** Every acknowledged offset at or above the first retained one is read back (no acknowledged loss). */
export function acknowledgedPresent(
  acknowledgedBelow: number,
  firstOffset: number,
  readOffsets: readonly number[],
): string | null {
  const seen = new Set(readOffsets);
  for (let o = firstOffset; o < acknowledgedBelow; o++) {
    if (!seen.has(o)) return `acknowledged message ${o} is missing`;
  }
  return null;
}

/** The floor never moves back within one purge generation. */
export function floorMonotone(previous: number, current: number): string | null {
  return current < previous ? `the tiered floor moved back from ${previous} to ${current}` : null;
}

/** No segment is evicted above the floor, and evicted segments form a prefix of the chain. */
export function evictionSound(segments: readonly SegmentView[], floor: number): string | null {
  let localSeen = false;
  for (const s of segments) {
    if (s.location !== "remote") {
      localSeen = true;
      continue;
    }
    if (localSeen) return `segment ${s.startOffset} is evicted after a local segment: not a prefix`;
    if (s.endOffset >= floor) return `segment ${s.startOffset} is evicted but the floor is ${floor}`;
  }
  return null;
}

/**
 * Each segment starts where the one before ends: evictions, merges (replaces of remote segments),
 * retention and crashes never leave a gap or an overlap in the chain.
 */
export function chainGapless(segments: readonly SegmentView[]): string | null {
  for (let i = 1; i < segments.length; i++) {
    const before = segments[i - 1]!;
    const s = segments[i]!;
    if (s.startOffset !== before.endOffset + 1) {
      return `segment ${s.startOffset} does not follow segment ${before.startOffset}, which ends at ${before.endOffset}`;
    }
  }
  return null;
}

/** After faults stop, uploads catch up within a bound of virtual time. */
export function caughtUp(floor: number, lastSealedEnd: number | null): string | null {
  if (lastSealedEnd === null || floor > lastSealedEnd) return null;
  return `uploads did not catch up: the floor is ${floor}, the last sealed segment ends at ${lastSealedEnd}`;
}

/** No object is deleted younger than `delete_grace`, by the simulation's own clock (not the store's). */
export function deletedOldEnough(key: string, createdAtMs: number, deletedAtMs: number, graceMs: number) {
  const ageMs = deletedAtMs - createdAtMs;
  return ageMs < graceMs
    ? `object ${key} was deleted ${ageMs} ms after its creation, under the grace ${graceMs}`
    : null;
}

/** What a `.remote` marker claims, next to the object it names (null when the object is absent). */
export interface MarkerView {
  startOffset: number;
  key: string;
  markerCrc32: number;
  objectCrc32: string | null;
}

/** Every marker refers to an object that exists and carries the marker's checksum. */
export function markersBacked(markers: readonly MarkerView[]): string | null {
  for (const m of markers) {
    if (m.objectCrc32 === null) {
      return `the marker of segment ${m.startOffset} names ${m.key}, which is missing`;
    }
    if (m.objectCrc32 !== String(m.markerCrc32)) {
      return `the marker of segment ${m.startOffset} says CRC32 ${m.markerCrc32}, ${m.key} says ${m.objectCrc32}`;
    }
  }
  return null;
}

/** Once GC has had its time, no object outside the live incarnations remains. */
export function orphansCollected(keys: readonly string[], livePaths: readonly string[]): string | null {
  const orphan = keys.find((k) => !livePaths.some((path) => k.includes(`/${path}`)));
  return orphan === undefined ? null : `orphan ${orphan} is still in the store after GC had its time`;
}

/** The chunk cache never holds more than its budget. */
export function cacheWithinBudget(usedBytes: number, budgetBytes: number): string | null {
  return usedBytes > budgetBytes
    ? `the chunk cache holds ${usedBytes} bytes, over its budget ${budgetBytes}`
    : null;
}

/**
 * No loop iteration moves more than `boundBytes` through the disk. Virtual time does not pass during
 * synchronous work, so tick lateness is measured by its cause: the bytes one turn of the loop reads
 * or writes, which are what a real tick would wait behind.
 */
export function stretchBounded(iterationBytesMax: number, boundBytes: number): string | null {
  return iterationBytesMax > boundBytes
    ? `one loop iteration moved ${iterationBytesMax} bytes through the disk, over the bound ${boundBytes}`
    : null;
}

/**
 * A stored consumer offset survives a crash: after it, the offset is the last one acknowledged, or one
 * stored after it whose acknowledgement the crash cut off; never an older or unknown value.
 */
export function consumerOffsetDurable(
  name: string,
  found: number | null,
  acknowledged: number | null,
  inFlight: readonly number[],
): string | null {
  if (found === acknowledged || (found !== null && inFlight.includes(found))) return null;
  return `after a crash consumer ${name} is at ${found}, not its acknowledged ${acknowledged} or a later store`;
}
