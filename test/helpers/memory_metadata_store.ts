import type { Metadata } from "../../src/broker/metadata/metadata.ts";
import type { MetadataStore } from "../../src/broker/metadata/metadata_store.ts";

/**
 * A metadata store in memory, for tests of the catalog: it proves the catalog needs nothing of a
 * store but the interface, lets a test fail the next commit or hold commits, and can play a
 * store shared with another writer, which applies a change again to a newer document.
 */
export class MemoryMetadataStore implements MetadataStore {
  /** Commits made durable so far, the other writer's included. */
  commits = 0;
  /** Times a commit ran its change, the runs on a document another writer replaced included. */
  changeRuns = 0;
  /** When set, the next commit rejects with it and changes nothing. */
  failNextCommit: Error | null = null;
  /**
   * When set, the next commit meets another writer, as a compare-and-swap store shared by several
   * servers can: its change runs on the current document, this other change commits first, and
   * the change runs again on the newer document, whose outcome is the one stored and returned.
   */
  concurrentChange: ((doc: Metadata) => void) | null = null;
  /** When set, commits wait for it before they apply. */
  held: Promise<void> | null = null;
  #doc: Metadata | null = null;
  /** What a load finds: the last document committed. */
  #stored: Metadata;

  constructor(stored: Metadata = { version: 2, clusterId: "c0ffee", nextStreamId: 1, streams: [] }) {
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

  onRemoteChange(_listener: (doc: Readonly<Metadata>) => void): void {}

  async commit<T>(change: (doc: Metadata) => T): Promise<T> {
    if (this.held !== null) await this.held;
    const failure = this.failNextCommit;
    this.failNextCommit = null;
    if (failure !== null) throw failure;
    const concurrent = this.concurrentChange;
    this.concurrentChange = null;
    if (concurrent !== null) {
      // The first run's document is stale by the time it would be stored: its outcome is dropped.
      this.changeRuns++;
      change(structuredClone(this.doc) as Metadata);
      const theirs = structuredClone(this.doc) as Metadata;
      concurrent(theirs);
      this.#store(theirs);
    }
    this.changeRuns++;
    const next = structuredClone(this.doc) as Metadata;
    const result = change(next);
    this.#store(next);
    return result;
  }

  #store(next: Metadata): void {
    this.#doc = next;
    this.#stored = structuredClone(next);
    this.commits++;
  }
}
