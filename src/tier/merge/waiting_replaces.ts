import type { ReplaceRemoteSegments } from "../../log/segment/segment_replacement.ts";

/** Milliseconds between two tries of the replaces waiting. */
export const waitingReplacesRetryIntervalMs = 1000;
/** Replaces waiting at most per shard; beyond, the oldest is dropped (its replica keeps the old chain). */
export const waitingReplacesMax = 4096;

/**
 * The committed replaces (merges) a replica could not take yet (`wait`): a segment of the range is
 * still local, or the replica's floor is behind the range (a follower behind its leader). They are
 * tried again once a second until the chain takes or rejects them. Bounded: a replace dropped
 * leaves the replica with the segments it replaced, which stay readable, since their objects are
 * deleted only once every replica took the replace (docs/DESIGN.md, "The adjacent-segment merger").
 */
export class WaitingReplaces {
  /** By partition, then by the first replaced offset: a later replace from the same start wins. */
  readonly #waiting = new Map<string, Map<number, ReplaceRemoteSegments>>();
  #count = 0;
  #tryAtMs = -Infinity;

  get count(): number {
    return this.#count;
  }

  /** Keeps `command` to try again; returns the replace dropped to stay within the bound, if any. */
  add(command: ReplaceRemoteSegments): ReplaceRemoteSegments | null {
    const byStart = this.#waiting.get(command.partition) ?? new Map<number, ReplaceRemoteSegments>();
    this.#waiting.set(command.partition, byStart);
    const start = command.markers[0]!.startOffset;
    if (!byStart.has(start)) this.#count++;
    byStart.set(start, command);
    if (this.#count <= waitingReplacesMax) return null;
    const [oldestPartition, oldest] = this.#waiting.entries().next().value!;
    const [dropStart, dropped] = oldest.entries().next().value!;
    this.#remove(oldestPartition, dropStart);
    return dropped;
  }

  forget(partition: string): void {
    this.#count -= this.#waiting.get(partition)?.size ?? 0;
    this.#waiting.delete(partition);
  }

  /** Every replace waiting, taken out, once per `waitingReplacesRetryIntervalMs`; else none. */
  takeDue(nowMs: number): ReplaceRemoteSegments[] {
    if (this.#count === 0 || nowMs < this.#tryAtMs) return [];
    this.#tryAtMs = nowMs + waitingReplacesRetryIntervalMs;
    const due = [...this.#waiting.values()].flatMap((byStart) =>
      [...byStart.values()].sort((a, b) => a.markers[0]!.startOffset - b.markers[0]!.startOffset)
    );
    this.#waiting.clear();
    this.#count = 0;
    return due;
  }

  #remove(partition: string, start: number): void {
    const byStart = this.#waiting.get(partition);
    if (byStart?.delete(start) === true) this.#count--;
    if (byStart?.size === 0) this.#waiting.delete(partition);
  }
}
