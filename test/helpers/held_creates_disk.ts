import { AroundDisk } from "../../src/runtime/around_disk.ts";
import type { CreateOptions, Disk, DiskFile } from "../../src/runtime/disk.ts";

/**
 * A Disk whose file creations under one directory wait, while held, until released: over the fs
 * backend's temp directory, its PUTs hang while its GETs (opens of published objects) go on.
 * Outside a harness's `InFlightDisk`, so a held creation is not an operation in flight that the
 * harness waits for.
 */
export class HeldCreatesDisk extends AroundDisk {
  readonly #heldDir: string;
  #released: Promise<void> | null = null;
  #release: () => void = () => {};
  #waiting = 0;

  constructor(inner: Disk, heldDir: string) {
    super(inner, (operation) => operation());
    this.#heldDir = heldDir.endsWith("/") ? heldDir : `${heldDir}/`;
  }

  /** Creations waiting for `release`. */
  get waiting(): number {
    return this.#waiting;
  }

  /** From now on, creations under the directory wait for `release`. */
  hold(): void {
    if (this.#released !== null) return;
    this.#released = new Promise<void>((resolve) => (this.#release = resolve));
  }

  /** Lets every waiting creation go on, and the later ones through at once. */
  release(): void {
    this.#release();
    this.#released = null;
  }

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    const released = this.#released;
    if (path.startsWith(this.#heldDir) && released !== null) {
      this.#waiting++;
      try {
        await released;
      } finally {
        this.#waiting--;
      }
    }
    return await super.createExclusive(path, options);
  }
}
