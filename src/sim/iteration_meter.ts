import { assert } from "../runtime/assert.ts";

/**
 * The bytes each turn of the event loop moves through the disk, and the most any turn moved so far.
 * An immediate queued from the check phase runs in the next turn, so a chain of immediates closes one
 * turn's sum at a time. Virtual time does not pass during synchronous work: these bytes are what a
 * real tick would wait behind.
 */
export class IterationBytesMeter {
  #bytes = 0;
  #bytesMax = 0;
  #running = false;

  /** Starts the chain of immediates that closes each turn's sum. */
  start(): void {
    assert(!this.#running, "the meter is started once");
    this.#running = true;
    setImmediate(this.#close);
  }

  /** Ends the chain: the immediate already queued closes the last turn. */
  stop(): void {
    this.#running = false;
  }

  /** Counts bytes a read or write moved in the current turn. */
  add(bytes: number): void {
    this.#bytes += bytes;
  }

  /** The most bytes one closed turn moved. */
  get bytesMax(): number {
    return this.#bytesMax;
  }

  readonly #close = (): void => {
    this.#bytesMax = Math.max(this.#bytesMax, this.#bytes);
    this.#bytes = 0;
    if (this.#running) setImmediate(this.#close);
  };
}
