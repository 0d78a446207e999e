import type { CreateOptions, Disk, DiskFile, DiskStat, OpenOptions } from "./disk.ts";
import type { PieceGate } from "../cooperation/piece_gate.ts";

/** What a wrapper does around each operation: start it (or not yet), and settle as it decides. */
export type AroundOperation = <T>(operation: () => Promise<T>) => Promise<T>;

/**
 * A `Disk` that runs every operation of the disk it wraps, and of the files it opens, through one
 * function: the shared shape of the wrappers that change when callers resume (`GatedDisk`) or
 * observe what is in flight (the tests' `InFlightDisk`), so each says only what it adds.
 */
export class AroundDisk implements Disk {
  readonly #inner: Disk;
  readonly #around: AroundOperation;

  constructor(inner: Disk, around: AroundOperation) {
    this.#inner = inner;
    this.#around = around;
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return aroundFile(await this.#around(() => this.#inner.open(path, options)), this.#around);
  }

  async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return aroundFile(await this.#around(() => this.#inner.createExclusive(path, options)), this.#around);
  }

  readSmallFile(path: string, maxBytes: number): Promise<Uint8Array | null> {
    return this.#around(() => this.#inner.readSmallFile(path, maxBytes));
  }

  list(dirPath: string): Promise<string[]> {
    return this.#around(() => this.#inner.list(dirPath));
  }

  stat(path: string): Promise<DiskStat | null> {
    return this.#around(() => this.#inner.stat(path));
  }

  mkdirp(dirPath: string): Promise<void> {
    return this.#around(() => this.#inner.mkdirp(dirPath));
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return this.#around(() => this.#inner.rename(fromPath, toPath));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return this.#around(() => this.#inner.link(existingPath, newPath));
  }

  unlink(path: string): Promise<void> {
    return this.#around(() => this.#inner.unlink(path));
  }

  removeTree(dirPath: string): Promise<void> {
    return this.#around(() => this.#inner.removeTree(dirPath));
  }

  fsyncDir(dirPath: string): Promise<void> {
    return this.#around(() => this.#inner.fsyncDir(dirPath));
  }

  capacityBytes(path: string): Promise<number> {
    return this.#around(() => this.#inner.capacityBytes(path));
  }
}

function aroundFile(file: DiskFile, around: AroundOperation): DiskFile {
  return {
    path: file.path,
    readAt: (buffer, position) => around(() => file.readAt(buffer, position)),
    writeAt: (data, position) => around(() => file.writeAt(data, position)),
    append: (data) => around(() => file.append(data)),
    sizeBytes: () => around(() => file.sizeBytes()),
    truncate: (lengthBytes) => around(() => file.truncate(lengthBytes)),
    sync: () => around(() => file.sync()),
    close: () => around(() => file.close()),
  };
}

/**
 * A `Disk` whose callers resume on the piece gate's turns. Every operation's completion is the
 * start of a stretch of synchronous work for its caller (decoding what was read, issuing the next
 * request), and in a busy loop the completions of dozens of operations land in the same turn of the
 * loop: their stretches add up ahead of the consensus tick. Resuming each caller on a turn of its
 * own bounds that sum to one stretch per turn, like the pieces of an upload. The operation itself
 * is not held back; only the caller's resumption waits.
 */
export class GatedDisk extends AroundDisk {
  constructor(inner: Disk, gate: PieceGate) {
    super(inner, (operation) => gated(gate, operation()));
  }
}

/** Settles like `operation`, on a turn of the gate: a failure waits for its turn as a result does. */
async function gated<T>(gate: PieceGate, operation: Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await operation;
  } catch (error) {
    await gate.turn();
    throw error;
  }
  await gate.turn();
  return result;
}
