import type { CreateOptions, Disk, DiskFile, DiskStat, OpenOptions } from "./disk.ts";
import type { PieceGate } from "./piece_gate.ts";

/**
 * A `Disk` whose callers resume on the piece gate's turns. Every operation's completion is the
 * start of a stretch of synchronous work for its caller (decoding what was read, issuing the next
 * request), and in a busy loop the completions of dozens of operations land in the same turn of the
 * loop: their stretches add up ahead of the consensus tick. Resuming each caller on a turn of its
 * own bounds that sum to one stretch per turn, like the pieces of an upload. The operation itself
 * runs as before; only the caller's resumption waits.
 */
export class GatedDisk implements Disk {
  readonly #inner: Disk;
  readonly #gate: PieceGate;

  constructor(inner: Disk, gate: PieceGate) {
    this.#inner = inner;
    this.#gate = gate;
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return new GatedFile(await gated(this.#gate, this.#inner.open(path, options)), this.#gate);
  }

  async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return new GatedFile(await gated(this.#gate, this.#inner.createExclusive(path, options)), this.#gate);
  }

  list(dirPath: string): Promise<string[]> {
    return gated(this.#gate, this.#inner.list(dirPath));
  }

  stat(path: string): Promise<DiskStat | null> {
    return gated(this.#gate, this.#inner.stat(path));
  }

  mkdirp(dirPath: string): Promise<void> {
    return gated(this.#gate, this.#inner.mkdirp(dirPath));
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return gated(this.#gate, this.#inner.rename(fromPath, toPath));
  }

  link(existingPath: string, newPath: string): Promise<void> {
    return gated(this.#gate, this.#inner.link(existingPath, newPath));
  }

  unlink(path: string): Promise<void> {
    return gated(this.#gate, this.#inner.unlink(path));
  }

  removeTree(dirPath: string): Promise<void> {
    return gated(this.#gate, this.#inner.removeTree(dirPath));
  }

  fsyncDir(dirPath: string): Promise<void> {
    return gated(this.#gate, this.#inner.fsyncDir(dirPath));
  }

  capacityBytes(path: string): Promise<number> {
    return gated(this.#gate, this.#inner.capacityBytes(path));
  }
}

class GatedFile implements DiskFile {
  readonly path: string;
  readonly #inner: DiskFile;
  readonly #gate: PieceGate;

  constructor(inner: DiskFile, gate: PieceGate) {
    this.path = inner.path;
    this.#inner = inner;
    this.#gate = gate;
  }

  readAt(buffer: Uint8Array, position: number): Promise<number> {
    return gated(this.#gate, this.#inner.readAt(buffer, position));
  }

  writeAt(data: Uint8Array, position: number): Promise<void> {
    return gated(this.#gate, this.#inner.writeAt(data, position));
  }

  append(data: Uint8Array): Promise<void> {
    return gated(this.#gate, this.#inner.append(data));
  }

  sizeBytes(): Promise<number> {
    return gated(this.#gate, this.#inner.sizeBytes());
  }

  truncate(lengthBytes: number): Promise<void> {
    return gated(this.#gate, this.#inner.truncate(lengthBytes));
  }

  sync(): Promise<void> {
    return gated(this.#gate, this.#inner.sync());
  }

  close(): Promise<void> {
    return gated(this.#gate, this.#inner.close());
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
