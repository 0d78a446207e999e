import { assert } from "../runtime/assert.ts";
import type { BufferPool } from "../runtime/buffer_pool.ts";
import type { DiskFile } from "../runtime/disk.ts";

/**
 * The bytes of the active segment encoded and not yet written. Batches are encoded straight into a
 * write buffer, borrowed from the shard's pool for one write and given back once it is written:
 * `#pendingBytes` of it are not yet written, and go at `#pendingPosition` in the active segment.
 */
export class WriteBuffer {
  #pool: BufferPool | null = null;
  #pending: Uint8Array | null = null;
  #pendingBytes = 0;
  #pendingPosition = 0;

  /**
   * Without a pool each batch is encoded into a buffer of its own and written alone; with one, a
   * group's batches share one buffer and one write, and a produce allocates nothing for its batch.
   */
  usePool(pool: BufferPool): void {
    assert(this.#pending === null, "Cannot change write buffers with a write pending");
    this.#pool = pool;
  }

  /** Whether a batch of `lengthBytes` would not fit in what the pending buffer has left. */
  wouldOverflow(lengthBytes: number): boolean {
    return this.#pending !== null && this.#pendingBytes + lengthBytes > this.#pending.length;
  }

  /**
   * Room for `lengthBytes` more at `position` in the segment; the caller has written the pending
   * bytes out if the batch did not fit. A batch larger than a pooled buffer gets a buffer of its
   * own, never pooled. `filled` then counts the bytes encoded into it.
   */
  space(lengthBytes: number, position: number): Uint8Array {
    if (this.#pending === null) {
      // With every pooled buffer out (more partitions writing at once than the pool keeps), the batch
      // gets a buffer of its own size, as it would have without a pool, rather than a new 1 MiB one.
      const pool = this.#pool;
      const pooled = pool !== null && lengthBytes <= pool.bufferBytes
        ? pool.takeBounded(pool.bufferBytes)
        : null;
      this.#pending = pooled ?? new Uint8Array(lengthBytes);
      this.#pendingBytes = 0;
      this.#pendingPosition = position;
    }
    assert(
      this.#pendingPosition + this.#pendingBytes === position &&
        this.#pendingBytes + lengthBytes <= this.#pending.length,
      "pending bytes must end where the segment does, with room for the batch",
    );
    return this.#pending.subarray(this.#pendingBytes, this.#pendingBytes + lengthBytes);
  }

  /** Counts `lengthBytes` encoded into the room `space` gave. */
  filled(lengthBytes: number): void {
    this.#pendingBytes += lengthBytes;
  }

  /**
   * Writes the pending bytes to the file `target` names (the active segment's `.log`), then gives
   * the buffer back: nothing refers to it after the write.
   */
  async flush(target: () => DiskFile): Promise<void> {
    const buffer = this.#pending;
    if (buffer === null) return;
    const bytes = buffer.subarray(0, this.#pendingBytes);
    const position = this.#pendingPosition;
    this.#pending = null;
    this.#pendingBytes = 0;
    try {
      await target().writeAt(bytes, position);
    } finally {
      this.#pool?.give(buffer);
    }
  }
}
