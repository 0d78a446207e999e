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
   * Applies `change` to a copy of the latest document, stores the copy durably, then makes it
   * current. Commits are serialized: each applies to the document the one before left.
   */
  commit(change: (doc: Metadata) => void): Promise<void>;
}
