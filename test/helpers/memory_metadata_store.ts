import type { Metadata } from "../../src/broker/metadata.ts";
import type { MetadataStore } from "../../src/broker/metadata_store.ts";

/**
 * A metadata store in memory, for tests of the catalog: it proves the catalog needs nothing of a
 * store but the interface, and lets a test fail the next commit.
 */
export class MemoryMetadataStore implements MetadataStore {
  /** Commits made durable so far. */
  commits = 0;
  /** When set, the next commit rejects with it and changes nothing. */
  failNextCommit: Error | null = null;
  #doc: Metadata | null = null;
  /** What a load finds: the last document committed. */
  #stored: Metadata;

  constructor(stored: Metadata = { version: 1, clusterId: "c0ffee", nextStreamId: 1, streams: [] }) {
    this.#stored = structuredClone(stored);
  }

  load(): Promise<Readonly<Metadata>> {
    this.#doc = structuredClone(this.#stored);
    return Promise.resolve(this.#doc);
  }

  get doc(): Readonly<Metadata> {
    if (this.#doc === null) throw new Error("Cannot read the metadata: it is not loaded");
    return this.#doc;
  }

  commit(change: (doc: Metadata) => void): Promise<void> {
    const failure = this.failNextCommit;
    this.failNextCommit = null;
    if (failure !== null) return Promise.reject(failure);
    const next = structuredClone(this.doc) as Metadata;
    change(next);
    this.#doc = next;
    this.#stored = structuredClone(next);
    this.commits++;
    return Promise.resolve();
  }
}
