import { AroundDisk } from "../../../src/runtime/disk/around_disk.ts";
import type { CreateOptions, Disk, DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";

/** Which operation of files under the held directory waits: their opens, or their creations. */
export type HeldOperation = "open" | "create";

/**
 * A Disk whose opens (or creations) of files under one directory wait, while held, until
 * released. Over the fs backend's object directory, held opens make its reads miss their deadline;
 * over its temp directory, held creations make its PUTs hang while its GETs go on. Outside a
 * harness's `InFlightDisk`, so a held operation is not one in flight that the harness waits for.
 */
export class HeldDisk extends AroundDisk {
  readonly #heldDir: string;
  readonly #operation: HeldOperation;
  #released: Promise<void> | null = null;
  #release: () => void = () => {};
  #calls = 0;
  #waiting = 0;

  constructor(inner: Disk, heldDir: string, operation: HeldOperation) {
    super(inner, (run) => run());
    this.#heldDir = heldDir.endsWith("/") ? heldDir : `${heldDir}/`;
    this.#operation = operation;
  }

  /** Operations of that kind on files under the directory so far, held or not. */
  get calls(): number {
    return this.#calls;
  }

  /** Operations waiting for `release`. */
  get waiting(): number {
    return this.#waiting;
  }

  /** From now on, operations of that kind under the directory wait for `release`. */
  hold(): void {
    if (this.#released !== null) return;
    this.#released = new Promise<void>((resolve) => (this.#release = resolve));
  }

  /** Lets every waiting operation go on, and the later ones through at once. */
  release(): void {
    this.#release();
    this.#released = null;
  }

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    if (this.#operation === "open") await this.#pass(path);
    return await super.open(path, options);
  }

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    if (this.#operation === "create") await this.#pass(path);
    return await super.createExclusive(path, options);
  }

  async #pass(path: string): Promise<void> {
    if (!path.startsWith(this.#heldDir)) return;
    this.#calls++;
    const released = this.#released;
    if (released === null) return;
    this.#waiting++;
    try {
      await released;
    } finally {
      this.#waiting--;
    }
  }
}
