import { assert } from "../runtime/assert.ts";
import type { MetadataStore } from "./metadata/metadata_store.ts";

/**
 * Producer ids a node takes from the metadata at once: one commit (an etcd transaction in a
 * cluster) per this many idempotent producers started on the node.
 */
export const producerIdBlockSize = 1000;

/**
 * The largest producer id given: Kafka's are int64, and one past 2^53 would not survive a JSON
 * number. At a block a millisecond, the ids last for almost three hundred thousand years.
 */
export const producerIdMax = Number.MAX_SAFE_INTEGER;

/** Every producer id is taken: none is ever given twice. */
export class ProducerIdsExhaustedError extends Error {
  override name = "ProducerIdsExhaustedError";
  constructor() {
    super(`Cannot give a producer id: every id up to ${producerIdMax} is taken`);
  }
}

/**
 * The producer ids this node gives to idempotent producers (InitProducerId): unique in the cluster
 * and never reused, since a node takes them in blocks of `producerIdBlockSize` by a commit of the
 * shared metadata (`Metadata.nextProducerId`), and a block is never given back. A restart leaves
 * the rest of its block unused. Callers that arrive while a block is being taken share its commit.
 */
export class ProducerIds {
  readonly #store: MetadataStore;
  readonly #blockSize: number;
  #next = 0;
  #end = 0;
  /** The commit taking the next block, shared by every caller that finds the block used up. */
  #taking: Promise<void> | null = null;

  constructor(store: MetadataStore, blockSize = producerIdBlockSize) {
    assert(Number.isInteger(blockSize) && blockSize >= 1, "a producer id block holds at least one id");
    this.#store = store;
    this.#blockSize = blockSize;
  }

  /** A producer id no producer in the cluster was given before. */
  async next(): Promise<number> {
    // Each pass either gives an id or waits for a commit that adds a block (or throws): a caller
    // that finds the new block used up by others before it runs again waits for the next one.
    for (let passes = 0; passes < 1000; passes++) {
      if (this.#next < this.#end) return this.#next++;
      this.#taking ??= this.#takeBlock().finally(() => {
        this.#taking = null;
      });
      await this.#taking;
    }
    throw new Error("Cannot give a producer id: blocks run out faster than they are taken");
  }

  async #takeBlock(): Promise<void> {
    const blockSize = this.#blockSize;
    const start = await this.#store.commit((doc) => {
      const first = doc.nextProducerId ?? 0;
      if (first + blockSize - 1 > producerIdMax) throw new ProducerIdsExhaustedError();
      doc.nextProducerId = first + blockSize;
      return first;
    });
    this.#next = start;
    this.#end = start + blockSize;
  }
}
