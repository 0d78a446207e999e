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
export function readBackIntact(messages: readonly { offset: number; payload: Uint8Array }[]): string | null {
  for (const m of messages) {
    const expected = m.offset & 0xff;
    if (m.payload.length === 0 || !m.payload.every((b) => b === expected)) {
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

/** After faults stop, uploads catch up within a bound of virtual time. */
export function caughtUp(floor: number, lastSealedEnd: number | null): string | null {
  if (lastSealedEnd === null || floor > lastSealedEnd) return null;
  return `uploads did not catch up: the floor is ${floor}, the last sealed segment ends at ${lastSealedEnd}`;
}
