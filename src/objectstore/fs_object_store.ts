import { directIoAlignBytes, type Disk, DiskError, type DiskFile } from "../runtime/disk/disk.ts";
import { pack, unpack } from "msgpackr";
import { BufferPool } from "../runtime/memory/buffers.ts";
import { Crc32Stream } from "../runtime/checksum/crc32.ts";
import { dirOf } from "../runtime/disk/file_ops.ts";
import type { Rng } from "../runtime/rng.ts";
import {
  type BodySource,
  checkKey,
  type DeleteResult,
  type GetOptions,
  keysPerRequestMax,
  type ListOptions,
  type ListPage,
  type ObjectHead,
  type ObjectStore,
  pieceBytesMax,
  type PieceSink,
  type PutOptions,
  type PutResult,
} from "./object_store.ts";
import {
  CorruptError,
  MalformedError,
  NotFoundError,
  NotModifiedError,
  PreconditionFailedError,
} from "./object_store_errors.ts";

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

/**
 * Objects are written in format 2: magic, metadata length, body offset (both u32 little-endian),
 * msgpack metadata, then zeros up to the body offset, a multiple of `directIoAlignBytes` so that
 * the body's writes can skip the page cache. Format 1 (magic, metadata length, metadata, body right
 * after) is still read.
 */
const magic = new TextEncoder().encode("STRAOBJ2");
const magicV1 = new TextEncoder().encode("STRAOBJ1");
const fixedHeaderBytes = 16;
const fixedHeaderBytesV1 = 12;
const metaBytesMax = 1024 * 1024;

/**
 * Bound on the piece buffers kept for streamed reads: two per stream running at once (the piece the
 * sink works on and the next, read meanwhile; a shard fills at most `fetch_concurrency` chunks at a
 * time, 4 by default). A stream that finds them all out reads into buffers of its own.
 */
export const streamBuffersMax = 8;

interface StoredMeta {
  sizeBytes: number;
  metadata: Record<string, string>;
  etag: string;
}

/**
 * A directory as an object store: the embedded default, and "archive to disk". Each object is one
 * file under `objects/`, named by its key: a header (magic, lengths, msgpack metadata, padding)
 * then the body, so an object and its metadata appear together or not at all. A put writes a temp
 * file piece by piece, fsyncs it, then links it into place (exact create-if-absent) or renames it
 * over the old one, and fsyncs the directory.
 */
export class FsObjectStore implements ObjectStore {
  readonly #disk: Disk;
  readonly #root: string;
  readonly #rng: Rng;
  /**
   * A cold-read storm streams chunk after chunk; a fresh 1 MiB buffer per stream outlived the disk
   * reads and writes it waited on, so V8 promoted it and it stayed resident, dead, until a full
   * collection (tens of megabytes in the pump benchmark's storm; docs/TUNING.md, "Buffer pools").
   */
  readonly #streamBuffers = new BufferPool({ bufferBytes: pieceBytesMax, buffersMax: streamBuffersMax });

  constructor(disk: Disk, root: string, rng: Rng) {
    this.#disk = disk;
    this.#root = root;
    this.#rng = rng;
  }

  async put(key: string, body: BodySource, options: PutOptions): Promise<PutResult> {
    const path = this.#objectPath(checkKey(key));
    const tempDir = `${this.#root}/tmp`;
    await this.#disk.mkdirp(tempDir);
    const tempPath = `${tempDir}/${this.#rng.hex64()}`;
    try {
      const etag = await this.#writeTemp(tempPath, body, options);
      await this.#disk.mkdirp(dirOf(path));
      await this.#publish(tempPath, path, options.ifAbsent, key);
      return { etag };
    } finally {
      // After a publish the temporary name is gone (not found); after a failed write, the failure
      // being thrown is the one to report, and a leftover under tmp/ is overwritten by no one.
      await this.#disk.unlink(tempPath).catch(() => {});
    }
  }

  async getRange(
    key: string,
    start: number,
    endExclusive: number,
    options: GetOptions = {},
  ): Promise<Uint8Array[]> {
    if (options.ifNoneMatch !== undefined && (await this.head(key))?.etag === options.ifNoneMatch) {
      throw new NotModifiedError(`Cannot get ${key}: not modified`, 304);
    }
    // streamRange reuses one buffer for every piece: each is copied out before the next is read.
    const pieces: Uint8Array[] = [];
    await this.streamRange(key, start, endExclusive, (piece) => {
      pieces.push(piece.slice());
      return Promise.resolve();
    });
    return pieces;
  }

  async streamRange(key: string, start: number, endExclusive: number, onPiece: PieceSink): Promise<number> {
    const file = await this.#open(checkKey(key));
    try {
      const { meta, headerBytes } = await readHeader(file, key);
      const end = Math.min(endExclusive, meta.sizeBytes);
      if (end > start) await this.#streamPieces(file, key, headerBytes + start, end - start, onPiece);
      return Math.max(0, end - start);
    } finally {
      await file.close();
    }
  }

  /**
   * Hands the `lengthBytes` from file position `from` to `onPiece` piece by piece, reading piece k + 1
   * into a second buffer while the sink works on piece k, so that a chunk fill's write and the next
   * read overlap (a fill's pieces took about a sixth less time in `bench:retention`'s cold reads).
   * The sink is done with a piece when its promise resolves; the buffers go back once no read is in
   * flight.
   */
  async #streamPieces(
    file: DiskFile,
    key: string,
    from: number,
    lengthBytes: number,
    onPiece: PieceSink,
  ): Promise<void> {
    const pieceBytes = Math.min(pieceBytesMax, lengthBytes);
    // A second buffer only when there is a second piece to read into it.
    const buffers = [this.#pieceBuffer(pieceBytes)];
    if (lengthBytes > pieceBytes) buffers.push(this.#pieceBuffer(pieceBytes));
    const readPiece = async (at: number, buffer: Uint8Array): Promise<Uint8Array> => {
      const piece = buffer.subarray(0, Math.min(pieceBytes, lengthBytes - at));
      if (await file.readAt(piece, from + at) !== piece.length) {
        throw new CorruptError(`Cannot read object ${key}: it is shorter than its header says`);
      }
      return piece;
    };
    /** The read of the next piece: observed at once, so a failure while the sink works is not unhandled. */
    const readAhead = (at: number, buffer: Uint8Array): Promise<Uint8Array> | null => {
      if (at >= lengthBytes) return null;
      const reading = readPiece(at, buffer);
      // Its failure is the stream's: heard where the piece is awaited, or in the finally below.
      reading.catch(() => {});
      return reading;
    };
    let reading = readAhead(0, buffers[0]!);
    try {
      // One pass a piece: bounded by the length.
      for (let at = 0, k = 0; reading !== null; at += pieceBytes, k++) {
        const piece = await reading;
        reading = readAhead(at + pieceBytes, buffers[(k + 1) % buffers.length]!);
        await onPiece(piece, at);
      }
    } finally {
      // A read still in flight writes into its buffer: it ends before the buffers go back.
      await reading?.catch(() => {});
      for (const buffer of buffers) this.#streamBuffers.give(buffer);
    }
  }

  /** A piece buffer: the pool's while it has one, else one of its own (which `give` ignores). */
  #pieceBuffer(pieceBytes: number): Uint8Array {
    return this.#streamBuffers.takeBounded(pieceBytes) ?? new Uint8Array(pieceBytes);
  }

  /** Gauges of the streamed reads' buffers: lent to running streams, and kept for the next. */
  get streamBuffers(): { lentCount: number; freeCount: number } {
    return { lentCount: this.#streamBuffers.lentCount, freeCount: this.#streamBuffers.freeCount };
  }

  async head(key: string): Promise<ObjectHead | null> {
    let file: DiskFile;
    try {
      file = await this.#open(checkKey(key));
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
    try {
      return (await readHeader(file, key)).meta;
    } finally {
      await file.close();
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const maxKeys = Math.min(options.maxKeys ?? keysPerRequestMax, keysPerRequestMax);
    const found: { key: string; mtimeMs: number }[] = [];
    // Only the directory the prefix names needs walking, in key order, and only until one key past
    // the page: a page costs what it lists, not what the bucket holds.
    const base = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
    await this.#walk(base, { prefix, startAfter: options.startAfter ?? "", wanted: maxKeys + 1, found });
    const pageKeys = found.slice(0, maxKeys);
    const objects = [];
    for (const { key, mtimeMs } of pageKeys) {
      const head = await this.head(key);
      if (head !== null) {
        objects.push({ key, sizeBytes: head.sizeBytes, lastModifiedMs: mtimeMs, etag: head.etag });
      }
    }
    return { objects, nextStartAfter: found.length > maxKeys ? pageKeys.at(-1)!.key : null };
  }

  async delete(keys: readonly string[]): Promise<DeleteResult[]> {
    const results: DeleteResult[] = [];
    const dirs = new Set<string>();
    for (const key of keys) {
      try {
        const path = this.#objectPath(checkKey(key));
        await this.#disk.unlink(path);
        dirs.add(dirOf(path));
        results.push({ key, error: null });
      } catch (error) {
        const missing = error instanceof DiskError && error.code === "not_found";
        results.push({ key, error: missing ? null : (error as Error) });
      }
    }
    for (const dir of dirs) await this.#disk.fsyncDir(dir);
    return results;
  }

  async #writeTemp(tempPath: string, body: BodySource, options: PutOptions): Promise<string> {
    const metaBytes = (sizeBytes: number, etag: string) =>
      pack({ sizeBytes, metadata: options.metadata, etag });
    const crc = new Crc32Stream();
    // The body is written once and read back only by a cold read, long after: it has no business
    // in the page cache, and where filling the cache with fresh pages is the slow part, going
    // around it doubles the upload's speed (docs/TUNING.md, "Direct I/O").
    const file = await this.#disk.createExclusive(tempPath, { bypassCache: true });
    const syncBehind = new SyncBehind(file);
    try {
      // The header is rewritten at the end with the etag; its length cannot change (fixed-width hex).
      const placeholder = metaBytes(options.sizeBytes, "00000000");
      const headerBytes = bodyOffset(placeholder.length);
      let written = 0;
      let unsyncedBytes = 0;
      for await (const piece of body()) {
        if (written + piece.length > options.sizeBytes) {
          throw new MalformedError(
            `Cannot put ${tempPath}: the body is longer than ${options.sizeBytes} bytes`,
          );
        }
        crc.update(piece);
        // Written back a little at a time: one fsync of a whole segment at the end would make every
        // other fsync on the disk (a produce's group commit) wait behind it. Each step's fsync runs
        // while the next step is written, and the one after waits for it: at most two steps of
        // unsynced bytes, and the disk is never idle waiting for the writer. Steps count bytes, not
        // pieces, so pieces smaller than a step do not each cost an fsync.
        for (let at = 0; at < piece.length;) {
          const part = piece.subarray(at, Math.min(piece.length, at + syncEveryBytes - unsyncedBytes));
          await file.writeAt(part, headerBytes + written);
          written += part.length;
          at += part.length;
          unsyncedBytes += part.length;
          if (unsyncedBytes === syncEveryBytes) {
            unsyncedBytes = 0;
            await syncBehind.next();
          }
        }
      }
      await syncBehind.finish();
      if (written !== options.sizeBytes) {
        throw new MalformedError(`Cannot put object: the body is ${written} bytes, not ${options.sizeBytes}`);
      }
      const digest = crc.digest();
      if (options.crc32 !== undefined && options.crc32 !== digest) {
        throw new CorruptError(
          `Cannot put object: its CRC32 is ${hex(digest)}, expected ${hex(options.crc32)}`,
        );
      }
      const etag = hex(digest);
      await file.writeAt(header(metaBytes(options.sizeBytes, etag)), 0);
      await file.sync();
      return etag;
    } finally {
      // A failed put may leave an fsync running: the file is closed only once it has ended.
      await syncBehind.settled();
      await file.close();
    }
  }

  async #publish(tempPath: string, path: string, ifAbsent: boolean, key: string): Promise<void> {
    if (ifAbsent) {
      try {
        await this.#disk.link(tempPath, path);
      } catch (error) {
        if (error instanceof DiskError && error.code === "exists") {
          throw new PreconditionFailedError(`Cannot create object ${key}: it already exists`, 412, {
            cause: error,
          });
        }
        throw error;
      }
    } else {
      await this.#disk.rename(tempPath, path);
    }
    await this.#disk.fsyncDir(dirOf(path));
  }

  async #open(key: string): Promise<DiskFile> {
    try {
      // Read around the page cache, as written: the chunk cache is where a cold read's bytes are
      // kept, and a second copy in the page cache would cost fresh memory (docs/TUNING.md, "Direct I/O").
      return await this.#disk.open(this.#objectPath(key), { readOnly: true, bypassCache: true });
    } catch (error) {
      if (error instanceof DiskError && error.code === "not_found") {
        throw new NotFoundError(`Cannot find object ${key}`, 404, { cause: error });
      }
      throw error;
    }
  }

  /**
   * Walks the objects under `relative` in key order, collecting into `walk.found` the keys that
   * start with `walk.prefix` and sort after `walk.startAfter`, until it holds `walk.wanted`. Entries
   * are looked at in name order and each is stat'ed only when the walk reaches it, so a page costs
   * what it lists; subtrees that hold no such key are not entered. A directory `a` sorts as its keys
   * do, as `a/`: after a sibling `a-b` (`-` sorts before `/`), which is taken first.
   */
  async #walk(relative: string, walk: ListWalk): Promise<void> {
    const dir = relative === "" ? `${this.#root}/objects` : `${this.#root}/objects/${relative}`;
    const stat = await this.#disk.stat(dir);
    if (stat === null || !stat.isDirectory) return;
    const names = await this.#disk.list(dir);
    const directories = new Set<string>();
    for (let i = 0; i < names.length && walk.found.length < walk.wanted;) {
      const name = names[i]!;
      const child = relative === "" ? name : `${relative}/${name}`;
      if (!directories.has(name)) {
        const childStat = await this.#disk.stat(`${this.#root}/objects/${child}`);
        if (childStat?.isFile === true && child.startsWith(walk.prefix) && child > walk.startAfter) {
          walk.found.push({ key: child, mtimeMs: childStat.mtimeMs });
        }
        // A file, or an entry gone since the listing.
        if (childStat?.isDirectory !== true) {
          i++;
          continue;
        }
      }
      directories.add(name);
      let before = i + 1;
      while (before < names.length && names[before]!.startsWith(name) && names[before]![name.length]! < "/") {
        before++;
      }
      if (before > i + 1) {
        // Siblings that sort before `name/` go first: the directory moves behind them.
        names.splice(i, 1);
        names.splice(before - 1, 0, name);
        continue;
      }
      const key = `${child}/`;
      const matchesPrefix = key.startsWith(walk.prefix) || walk.prefix.startsWith(key);
      // Every key inside sorts before `startAfter` when the directory does and does not hold it.
      const allBefore = key < walk.startAfter && !walk.startAfter.startsWith(key);
      if (matchesPrefix && !allBefore) await this.#walk(child, walk);
      i++;
    }
  }

  #objectPath(key: string): string {
    return `${this.#root}/objects/${key}`;
  }
}

/** A listing's walk: what it looks for, and what it found so far, in key order. */
interface ListWalk {
  prefix: string;
  startAfter: string;
  /** Keys to find before the walk stops: one past the page, to tell whether another follows. */
  wanted: number;
  found: { key: string; mtimeMs: number }[];
}

/**
 * How much of an object is written between two fsyncs of its temp file. Its writes go around the page
 * cache (`bypassCache`), so an fsync has little to write back and a produce's fsync little to wait
 * behind: in the pump benchmark's quick upload phase 1 MiB steps uploaded at 623 to 683 MB/s against
 * 369 to 400 with 256 KiB steps, the producer's p99 the same (4.0 to 4.8 ms), and 4 MiB steps were
 * no faster. Where the file system refuses direct writes they are buffered, and this step lets a
 * produce's fsync wait behind up to 1 MiB of writeback (10.7 to 12.8 ms of producer p99 at 1 MiB
 * against 5.9 to 8.0 at 256 KiB). Each fsync overlaps the next step's write (`SyncBehind`). Both
 * measurements: docs/TUNING.md, "The fs store's fsync step".
 */
export const syncEveryBytes = 1024 * 1024;

function bodyOffset(metaLength: number): number {
  return Math.ceil((fixedHeaderBytes + metaLength) / directIoAlignBytes) * directIoAlignBytes;
}

/** The header without its padding: the body is written at `bodyOffset` and the gap reads as zeros. */
function header(metaBytes: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(fixedHeaderBytes + metaBytes.length);
  bytes.set(magic, 0);
  const view = new DataView(bytes.buffer);
  view.setUint32(8, metaBytes.length, true);
  view.setUint32(12, bodyOffset(metaBytes.length), true);
  bytes.set(metaBytes, fixedHeaderBytes);
  return bytes;
}

async function readHeader(file: DiskFile, key: string): Promise<{ meta: StoredMeta; headerBytes: number }> {
  const fixed = new Uint8Array(fixedHeaderBytes);
  const corrupt = () => new CorruptError(`Cannot read object ${key}: its header is damaged`);
  const read = await file.readAt(fixed, 0);
  const isV1 = read >= fixedHeaderBytesV1 && magicV1.every((b, i) => fixed[i] === b);
  if (!isV1 && (read !== fixedHeaderBytes || !magic.every((b, i) => fixed[i] === b))) throw corrupt();
  const view = new DataView(fixed.buffer);
  const metaLength = view.getUint32(8, true);
  if (metaLength > metaBytesMax) throw corrupt();
  const metaAt = isV1 ? fixedHeaderBytesV1 : fixedHeaderBytes;
  const headerBytes = isV1 ? metaAt + metaLength : view.getUint32(12, true);
  if (headerBytes < metaAt + metaLength || headerBytes > metaAt + metaLength + directIoAlignBytes) {
    throw corrupt();
  }
  const metaBytes = new Uint8Array(metaLength);
  if ((await file.readAt(metaBytes, metaAt)) !== metaLength) throw corrupt();
  return { meta: unpack(metaBytes) as StoredMeta, headerBytes };
}

export function hex(crc: number): string {
  return crc.toString(16).padStart(8, "0");
}
