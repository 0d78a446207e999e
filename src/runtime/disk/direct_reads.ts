import { constants as fsConstants } from "node:fs";
import * as fs from "node:fs/promises";
import { assert, isBug } from "../assert.ts";
import { directIoAlignBytes } from "./disk.ts";

/**
 * Reads around the page cache (`O_DIRECT`), for files opened with `bypassCache`. An `fs` object
 * store's objects are written that way, so a cold read of one finds nothing cached, and a buffered
 * read would have the kernel fill the page cache first, with pages it must take from fresh memory:
 * on the test VM, direct writes with buffered reads cost the pump benchmark's storm more than the
 * uploads gained (docs/TUNING.md, "Direct I/O"). A direct read has the device fill one of a few
 * aligned buffers that are used again and again, and the bytes asked for are copied out of it.
 *
 * Direct I/O needs the memory, the position and the length aligned: the buffers are carved from one
 * WebAssembly memory, whose buffer starts on a page, and each read is widened to aligned bounds.
 */
export class DirectReads {
  /** The most one pass reads: a piece of `bounceBytes - directIoAlignBytes` at any position. */
  readonly bounceBytes: number;
  readonly #free: Uint8Array[];
  #bytesRead = 0;

  constructor(options: { bounceBytes: number; buffersMax: number }) {
    assert(
      options.bounceBytes >= 2 * directIoAlignBytes && options.bounceBytes % directIoAlignBytes === 0,
      "bounceBytes must be a multiple of directIoAlignBytes, at least two",
    );
    assert(Number.isInteger(options.buffersMax) && options.buffersMax >= 1, "buffersMax must be positive");
    this.bounceBytes = options.bounceBytes;
    const wasmPageBytes = 64 * 1024;
    const pages = Math.ceil((options.bounceBytes * options.buffersMax) / wasmPageBytes);
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages }).buffer;
    this.#free = Array.from(
      { length: options.buffersMax },
      (_, i) => new Uint8Array(memory, i * options.bounceBytes, options.bounceBytes),
    );
  }

  /** Gauge: buffers not lent to a read. */
  get freeCount(): number {
    return this.#free.length;
  }

  /** Counter: bytes handed to callers from direct reads. */
  get bytesRead(): number {
    return this.#bytesRead;
  }

  /**
   * A second handle on the file at `path` for direct reads, or null (then the caller reads buffered,
   * through the handle it has) where it cannot be had: the file system refuses `O_DIRECT` (EINVAL),
   * the path is gone (an object deleted while it is read) or names another inode, or the process is
   * out of descriptors. It is only a faster way to the same bytes.
   */
  async open(path: string, inode: number): Promise<fs.FileHandle | null> {
    const { O_RDONLY, O_DIRECT } = fsConstants;
    if (O_DIRECT === undefined) return null;
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(path, O_RDONLY | O_DIRECT);
    } catch (error) {
      if (isBug(error)) throw error;
      // Refused (see above): the caller reads buffered, which the direct-read byte count shows.
      return null;
    }
    if (Number((await handle.stat()).ino) === inode) return handle;
    await handle.close();
    return null;
  }

  /**
   * Reads up to `buffer.length` bytes at `position` through `handle`; the count read, fewer only at
   * the end of the file. Null when no aligned buffer is free or the file system refused the read
   * (EINVAL): the caller then reads buffered.
   */
  async read(handle: fs.FileHandle, buffer: Uint8Array, position: number): Promise<number | null> {
    const bounce = this.#free.pop();
    if (bounce === undefined) return null;
    try {
      return await this.#readThrough(handle, bounce, buffer, position);
    } catch (error) {
      if ((error as { code?: string }).code === "EINVAL") return null;
      throw error;
    } finally {
      this.#free.push(bounce);
    }
  }

  /** Bounded by the byte count: every pass but the last copies at least one byte. */
  async #readThrough(
    handle: fs.FileHandle,
    bounce: Uint8Array,
    buffer: Uint8Array,
    position: number,
  ): Promise<number> {
    const align = directIoAlignBytes;
    let done = 0;
    while (done < buffer.length) {
      const at = position + done;
      const alignedAt = at - (at % align);
      const skip = at - alignedAt;
      const span = Math.min(bounce.length, Math.ceil((skip + buffer.length - done) / align) * align);
      const { bytesRead } = await handle.read(bounce, 0, span, alignedAt);
      const useful = Math.min(bytesRead - skip, buffer.length - done);
      if (useful <= 0) break;
      buffer.set(bounce.subarray(skip, skip + useful), done);
      done += useful;
    }
    this.#bytesRead += done;
    return done;
  }
}

/** How big a read must be to go around the page cache: a header or an index entry stays cached. */
export const directReadBytesMin = 64 * 1024;

let shared: DirectReads | null = null;

/**
 * The process's direct-read buffers: eight of a piece (1 MiB) and one alignment unit, as many as the
 * `fs` store keeps for streamed reads (`streamBuffersMax`); more reads at once are buffered.
 */
export function sharedDirectReads(): DirectReads {
  shared ??= new DirectReads({ bounceBytes: 1024 * 1024 + directIoAlignBytes, buffersMax: 8 });
  return shared;
}
