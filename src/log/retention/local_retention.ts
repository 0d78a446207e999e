import { assert } from "../../runtime/assert.ts";
import { assertChainOrder, type RetentionSegment } from "./total_retention.ts";

/**
 * Local retention's decisions, as pure functions: which local copies of uploaded segments one
 * eviction pass replaces with markers, and whether a partition is under local pressure (the
 * envelope wants a segment gone that the floor has not passed). The tier service looks once a
 * second; the log runs the eviction's durable steps (`segment_eviction.ts`).
 */

/** Segments one eviction pass evicts at most: a pass holds the writer loop for a bounded time. */
export const evictionSegmentsPerPassMax = 16;

/** The local envelope of a topic (`local_retention_age` / `local_retention_size`); null means unlimited. */
export interface LocalEnvelope {
  ageMs: number | null;
  sizeBytes: number | null;
}

/** Whether the local envelope still wants a segment, with `localBytes` on local disk. */
export type KeepLocal = (segment: RetentionSegment, localBytes: number) => boolean;

/**
 * The envelope as of `nowUs` (wall clock, microseconds): a segment is kept while the local bytes
 * are within the size and its newest message is within the age.
 */
export function keepLocalWithin(envelope: LocalEnvelope, nowUs: number): KeepLocal {
  assert(envelope.ageMs === null || envelope.ageMs >= 0, "a local retention age is not negative");
  assert(envelope.sizeBytes === null || envelope.sizeBytes >= 0, "a local retention size is not negative");
  assert(Number.isFinite(nowUs), "the wall clock reads a finite time");
  return (segment, localBytes) =>
    (envelope.sizeBytes === null || localBytes <= envelope.sizeBytes) &&
    (envelope.ageMs === null || segment.maxTimestampUs >= nowUs - envelope.ageMs * 1000);
}

/**
 * When (wall clock, microseconds) the oldest sealed segment with a local `.log` leaves the age
 * envelope: the moment time alone changes what a look decides. Null when the envelope has no age,
 * no sealed segment is local, or that segment is already past it (then only a floor's move or a
 * write changes the decision).
 */
export function nextLocalAgeOutUs(
  segments: readonly RetentionSegment[],
  envelope: LocalEnvelope,
  nowUs: number,
): number | null {
  if (envelope.ageMs === null) return null;
  const first = segments.find((s) => s.sealed && s.location !== "remote");
  if (first === undefined) return null;
  // `keepLocalWithin` keeps a segment through `maxTimestampUs + ageMs`: it is out a microsecond later.
  const ageOutUs = first.maxTimestampUs + envelope.ageMs * 1000 + 1;
  return ageOutUs > nowUs ? ageOutUs : null;
}

/** Bytes of the segments whose `.log` is on local disk (local or uploaded). */
export function localBytesOf(segments: readonly RetentionSegment[]): number {
  return segments.filter((s) => s.location !== "remote").reduce((sum, s) => sum + s.sizeBytes, 0);
}

/**
 * The segments one eviction pass evicts, oldest first: walks sealed segments from the front, past
 * those already remote, and stops at the first that is active, not below the tiered floor
 * (exclusive), or still wanted by `keepLocal`; at most `evictionSegmentsPerPassMax`. Each one
 * chosen counts as gone for the next one's look. The result is a run of consecutive segments.
 */
export function evictionVictims<S extends RetentionSegment>(
  segments: readonly S[],
  floor: number,
  keepLocal: KeepLocal,
): S[] {
  assertChainOrder(segments);
  assert(floor >= 0, "the tiered floor is not negative");
  const victims: S[] = [];
  let localBytes = localBytesOf(segments);
  for (const segment of segments) {
    if (victims.length >= evictionSegmentsPerPassMax || !segment.sealed || segment.endOffset >= floor) break;
    if (segment.location === "remote") continue;
    if (keepLocal(segment, localBytes)) break;
    victims.push(segment);
    localBytes -= segment.sizeBytes;
    assert(localBytes >= 0, "the local bytes left after an eviction are not negative");
  }
  return victims;
}

/**
 * The envelope's overshoot: local bytes of the sealed segments the envelope wants gone (by age or
 * size, oldest first, as an eviction would take them) that are still on local disk, whatever the
 * floor. Below the floor eviction takes them at once, so what stays is mostly what uploads have not
 * reached yet.
 */
export function overshootBytes(segments: readonly RetentionSegment[], keepLocal: KeepLocal): number {
  assertChainOrder(segments);
  let localBytes = localBytesOf(segments);
  let overshoot = 0;
  for (const segment of segments) {
    if (!segment.sealed) break;
    if (segment.location === "remote") continue;
    if (keepLocal(segment, localBytes)) break;
    overshoot += segment.sizeBytes;
    localBytes -= segment.sizeBytes;
  }
  return overshoot;
}

/**
 * One look at a tiered partition: `evict` when its oldest sealed local segment is below the floor
 * (the pass then applies the envelope); otherwise `hold`, under pressure when the envelope wants
 * that segment gone although the floor has not passed it.
 */
export type LocalRetentionDecision = { kind: "evict" } | { kind: "hold"; underPressure: boolean };

export function decideLocalRetention(
  segments: readonly RetentionSegment[],
  floor: number,
  keepLocal: KeepLocal,
): LocalRetentionDecision {
  assertChainOrder(segments);
  assert(floor >= 0, "the tiered floor is not negative");
  const first = segments.find((s) => s.sealed && s.location !== "remote");
  if (first !== undefined && first.endOffset < floor) return { kind: "evict" };
  const underPressure = first !== undefined && !keepLocal(first, localBytesOf(segments));
  return { kind: "hold", underPressure };
}
