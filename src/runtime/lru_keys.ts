/**
 * Keys in the order of their last use, least recent first: the pure choice behind a bounded cache's
 * eviction (`OpenFileCache` keeps its idle files here). A `Set` keeps insertion order, so a use
 * deletes and re-inserts its key.
 */
export class LruKeys<K> {
  readonly #keys = new Set<K>();

  get size(): number {
    return this.#keys.size;
  }

  has(key: K): boolean {
    return this.#keys.has(key);
  }

  /** Makes `key` the most recently used, adding it when absent. */
  touch(key: K): void {
    this.#keys.delete(key);
    this.#keys.add(key);
  }

  /** Removes `key`; false when it was not there. */
  delete(key: K): boolean {
    return this.#keys.delete(key);
  }

  /** The least recently used key, or undefined when there is none. */
  oldest(): K | undefined {
    for (const key of this.#keys) return key;
    return undefined;
  }
}
