import { assert } from "../assert.ts";

/** The largest reserve configuration accepts: address space, not memory, but still bounded. */
export const externalMemoryReserveBytesMax = 4 * 1024 ** 3;

/**
 * Address space the JavaScript engine counts as external memory, so that short-lived response
 * buffers do not start full garbage collections.
 *
 * Why: every poll answer is an `ArrayBuffer` of its own (about 100 KiB for 100 × 1 KiB), which the
 * HTTP layer holds until it is written, so it cannot be pooled. Minor collections free the dead
 * ones, but between two of them tens of megabytes of dead answers pile up, and V8 starts a full
 * collection when the heap plus external memory passes its global limit: the old generation times
 * its growing factor plus the external memory seen at the last full collection times at most 1.1.
 * With a few megabytes of external memory that leaves almost no room, and a storm of cold reads
 * started a full collection every one to two seconds, each pausing the loop 4 to 12 ms
 * (docs/TUNING.md, "external_memory_reserve"). The reserve raises that last term: 512 MiB leaves
 * about 50 MB of room, more than a minor collection's worth of answers, so full collections come
 * from the old generation's growth (five times fewer in the benchmark's storm). A poll's answer is
 * also freed as soon as it is read where the runtime can (`buffers.ts`; Deno can, Node 20
 * cannot), so far fewer dead answers wait; the reserve covers the other short-lived buffers, and
 * runtimes without that freeing.
 *
 * The buffer is never read or written: the engine's allocator zero-fills by asking the kernel for
 * fresh pages, which are not resident until touched, so the reserve costs address space, not RSS
 * (a test holds both runtimes to that).
 */
export class ExternalMemoryReserve {
  readonly sizeBytes: number;
  /** Held, never touched; null once released or when the reserve is 0. */
  #buffer: ArrayBuffer | null;

  /** `allocate` is `new ArrayBuffer` but for tests of a failed allocation. */
  constructor(sizeBytes: number, allocate: (sizeBytes: number) => ArrayBuffer = (n) => new ArrayBuffer(n)) {
    assert(
      Number.isSafeInteger(sizeBytes) && sizeBytes >= 0 && sizeBytes <= externalMemoryReserveBytesMax,
      `Cannot reserve external memory: ${sizeBytes} bytes is not between 0 and ${externalMemoryReserveBytesMax}`,
    );
    this.sizeBytes = sizeBytes;
    this.#buffer = sizeBytes > 0 ? allocate(sizeBytes) : null;
  }

  /** Bytes reserved now (0 after `release`). */
  get heldBytes(): number {
    return this.#buffer?.byteLength ?? 0;
  }

  /** Lets the engine free the reserve at its next full collection. Idempotent. */
  release(): void {
    this.#buffer = null;
  }
}
