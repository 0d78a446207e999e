import type { DiskFile } from "../runtime/disk.ts";

/**
 * The fsyncs of a file being written, one at a time, each running while the writer goes on: `next`
 * waits for the fsync before it (a bound of one in flight) and starts another; `finish` waits for
 * the last. A failed fsync is kept until it is waited for, so it fails the write, never goes
 * unhandled, and is never lost.
 */
export class SyncBehind {
  readonly #file: DiskFile;
  /** The fsync in flight, settled to its error (or `null`) so that its failure waits for `next`. */
  #running: Promise<unknown> | null = null;

  constructor(file: DiskFile) {
    this.#file = file;
  }

  async next(): Promise<void> {
    await this.finish();
    this.#running = this.#file.sync().then(
      () => null,
      (error: unknown) => error ?? new Error(`Cannot fsync ${this.#file.path}: it failed without an error`),
    );
  }

  async finish(): Promise<void> {
    const running = this.#running;
    this.#running = null;
    if (running === null) return;
    const error = await running;
    if (error !== null) throw error;
  }

  /**
   * Waits for an fsync still running, whatever its outcome, when the write has already failed for
   * another reason: that first error is the one reported, and the file may then be closed.
   */
  async settled(): Promise<void> {
    await this.#running;
    this.#running = null;
  }
}
