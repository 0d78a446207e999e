import { assert } from "../../runtime/assert.ts";
import type { CommittedOffset } from "./offsets_records.ts";

/** One group's committed offsets by topic, then partition. */
type GroupOffsets = Map<string, Map<number, CommittedOffset>>;

/** A committed offset with where it belongs. */
export interface CommittedEntry extends CommittedOffset {
  groupId: string;
  topic: string;
  partition: number;
}

/**
 * The committed offsets of the groups one node coordinates, in memory, as their records in
 * `__consumer_offsets` say: read back when a partition of that topic is loaded, changed once a
 * commit's records are appended. Each group holds at most `offsetsPerGroupMax` partitions.
 */
export class CommittedOffsets {
  readonly #groups = new Map<string, GroupOffsets>();
  readonly #offsetsPerGroupMax: number;

  constructor(offsetsPerGroupMax: number) {
    assert(offsetsPerGroupMax >= 1, "Cannot keep committed offsets: the bound per group must be positive");
    this.#offsetsPerGroupMax = offsetsPerGroupMax;
  }

  get(groupId: string, topic: string, partition: number): CommittedOffset | null {
    return this.#groups.get(groupId)?.get(topic)?.get(partition) ?? null;
  }

  has(groupId: string): boolean {
    return this.#groups.has(groupId);
  }

  /** How many partitions the group has offsets for. */
  countOf(groupId: string): number {
    let n = 0;
    for (const partitions of this.#groups.get(groupId)?.values() ?? []) n += partitions.size;
    return n;
  }

  /** Whether setting these partitions would take the group past its bound (new ones count). */
  wouldExceed(groupId: string, keys: readonly { topic: string; partition: number }[]): boolean {
    const fresh = new Set<string>();
    for (const { topic, partition } of keys) {
      if (this.get(groupId, topic, partition) === null) fresh.add(`${topic}\u0000${partition}`);
    }
    return this.countOf(groupId) + fresh.size > this.#offsetsPerGroupMax;
  }

  /** Sets (or with null removes) one partition's committed offset. */
  set(groupId: string, topic: string, partition: number, value: CommittedOffset | null): void {
    if (value === null) return this.#remove(groupId, topic, partition);
    let group = this.#groups.get(groupId);
    if (group === undefined) this.#groups.set(groupId, group = new Map());
    let partitions = group.get(topic);
    if (partitions === undefined) group.set(topic, partitions = new Map());
    partitions.set(partition, value);
  }

  #remove(groupId: string, topic: string, partition: number): void {
    const group = this.#groups.get(groupId);
    const partitions = group?.get(topic);
    if (partitions === undefined) return;
    partitions.delete(partition);
    if (partitions.size === 0) group!.delete(topic);
    if (group!.size === 0) this.#groups.delete(groupId);
  }

  /** Every offset of the group, by topic in commit order. */
  entriesOf(groupId: string): CommittedEntry[] {
    const entries: CommittedEntry[] = [];
    for (const [topic, partitions] of this.#groups.get(groupId) ?? []) {
      for (const [partition, value] of partitions) entries.push({ groupId, topic, partition, ...value });
    }
    return entries;
  }

  groupIds(): string[] {
    return [...this.#groups.keys()];
  }

  /** Drops the group's offsets; returns them, for their tombstones. */
  removeGroup(groupId: string): CommittedEntry[] {
    const entries = this.entriesOf(groupId);
    this.#groups.delete(groupId);
    return entries;
  }

  /**
   * The smallest offset any group committed for a topic's partition, or null when none did: what
   * total retention's consumer barrier keeps.
   */
  minimumFor(topic: string, partition: number): number | null {
    let least: number | null = null;
    for (const group of this.#groups.values()) {
      const offset = group.get(topic)?.get(partition)?.offset;
      if (offset !== undefined && (least === null || offset < least)) least = offset;
    }
    return least;
  }
}
