import type { Metadata } from "./metadata.ts";

/**
 * Where the cluster's metadata document lives. The catalog reads and changes the metadata only
 * through this interface; only the composition root knows which implementation it has.
 */
export interface MetadataStore {
  /** Reads the stored document, creating it (with a cluster id) on first boot; called once, first. */
  load(): Promise<Readonly<Metadata>>;
  /** The current document: the last one loaded or committed. */
  readonly doc: Readonly<Metadata>;
  /**
   * Applies `change` to a copy of the latest document, stores the copy durably, makes it current,
   * and resolves with what `change` returned. Commits are serialized: each applies to the document
   * the one before left.
   *
   * `change` may run more than once, each time on a newer document: a store shared by several
   * servers (compare-and-swap on a revision) applies it again when another commit came first. So
   * it must derive what it writes and returns from `doc` (ids included), or refuse by throwing
   * when `doc` no longer agrees with what its caller prepared; it may read values that do not
   * depend on the document, and it must change nothing but `doc`. A throw rejects the commit and
   * stores nothing.
   */
  commit<T>(change: (doc: Metadata) => T): Promise<T>;
  /**
   * Calls `listener` whenever the document changes by another writer's commit (a store shared by
   * several servers), after `doc` is the new one. A store with one writer never calls it.
   */
  onRemoteChange(listener: (doc: Readonly<Metadata>) => void): void;
}
