import { assert } from "./assert.ts";

/**
 * A held share of a semaphore. `release()` gives it back and must be called exactly once: a
 * second call is a bug and throws. `using permit = await sem.acquire()` releases it at the end of
 * the scope unless it was already released explicitly, so early release and `using` combine.
 */
export class Permit implements Disposable {
  #released = false;
  readonly weight: number;
  readonly #onRelease: (weight: number) => void;

  constructor(weight: number, onRelease: (weight: number) => void) {
    this.weight = weight;
    this.#onRelease = onRelease;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    assert(!this.#released, "Cannot release a permit twice");
    this.#released = true;
    this.#onRelease(this.weight);
  }

  [Symbol.dispose](): void {
    if (!this.#released) this.release();
  }
}
