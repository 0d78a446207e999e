import { assert } from "./assert.ts";

/** Buckets of a map: a change copies this many slots and one bucket, so about n / 256 entries. */
const bucketCount = 256;

interface Entry<V> {
  value: V;
  /** When the key first went in (a count): the order `ordered` sorts by. */
  seq: number;
}

/**
 * An immutable map from string keys whose changes cost about `n / 256` copied entries, not `n`:
 * `with` and `without` return a new map that shares every bucket but the one they touch. Pure cores
 * that keep one record per partition use it, so one event for one partition of ten thousand does
 * not copy the other records. Iteration goes bucket by bucket; `ordered` gives keys in the order
 * they first went in, for decisions whose ties must not depend on hashing.
 */
export class PersistentMap<V> implements ReadonlyMap<string, V> {
  readonly #buckets: readonly (ReadonlyMap<string, Entry<V>> | undefined)[];
  readonly size: number;
  readonly #nextSeq: number;

  private constructor(
    buckets: readonly (ReadonlyMap<string, Entry<V>> | undefined)[],
    size: number,
    nextSeq: number,
  ) {
    this.#buckets = buckets;
    this.size = size;
    this.#nextSeq = nextSeq;
  }

  static empty<V>(): PersistentMap<V> {
    return new PersistentMap<V>(new Array(bucketCount).fill(undefined), 0, 0);
  }

  get(key: string): V | undefined {
    return this.#buckets[bucketOf(key)]?.get(key)?.value;
  }

  has(key: string): boolean {
    return this.#buckets[bucketOf(key)]?.has(key) ?? false;
  }

  /** This map with `key` set to `value`; a key already present keeps its place in `ordered`. */
  with(key: string, value: V): PersistentMap<V> {
    const index = bucketOf(key);
    const bucket = this.#buckets[index];
    const before = bucket?.get(key);
    const next = new Map(bucket ?? []);
    next.set(key, { value, seq: before?.seq ?? this.#nextSeq });
    const buckets = [...this.#buckets];
    buckets[index] = next;
    const added = before === undefined ? 1 : 0;
    return new PersistentMap(buckets, this.size + added, this.#nextSeq + added);
  }

  /** This map without `key` (itself when the key is absent). */
  without(key: string): PersistentMap<V> {
    const index = bucketOf(key);
    const bucket = this.#buckets[index];
    if (bucket === undefined || !bucket.has(key)) return this;
    const next = new Map(bucket);
    next.delete(key);
    const buckets = [...this.#buckets];
    buckets[index] = next.size === 0 ? undefined : next;
    assert(this.size > 0, "a persistent map's size cannot go below 0");
    return new PersistentMap(buckets, this.size - 1, this.#nextSeq);
  }

  /** `keys` (each present in the map) in the order they first went in. */
  ordered(keys: Iterable<string>): string[] {
    const seqs = [...keys].map((key) => {
      const entry = this.#buckets[bucketOf(key)]?.get(key);
      assert(entry !== undefined, `Cannot order key ${key}: it is not in the map`);
      return { key, seq: entry.seq };
    });
    return seqs.sort((a, b) => a.seq - b.seq).map((s) => s.key);
  }

  /** How a key ranks in `ordered`: a smaller rank went in earlier. */
  rankOf(key: string): number {
    const entry = this.#buckets[bucketOf(key)]?.get(key);
    assert(entry !== undefined, `Cannot rank key ${key}: it is not in the map`);
    return entry.seq;
  }

  *entries(): MapIterator<[string, V]> {
    for (const bucket of this.#buckets) {
      if (bucket === undefined) continue;
      for (const [key, entry] of bucket) yield [key, entry.value];
    }
  }

  *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    for (const [key, value] of this.entries()) callback(value, key, this);
  }
}

/** FNV-1a over the key's UTF-16 code units, reduced to a bucket. */
function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % bucketCount;
}
