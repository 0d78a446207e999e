import { AroundDisk } from "../../src/runtime/around_disk.ts";
import type { Disk, DiskFile, OpenOptions } from "../../src/runtime/disk.ts";

/**
 * A Disk whose opens of files under one directory wait, while held, until released: a store on
 * this disk (the fs backend) then does not answer its reads in time. Outside a harness's
 * `InFlightDisk`, so a held open is not an operation in flight that the harness waits for.
 */
export class HeldOpensDisk extends AroundDisk {
  readonly #heldDir: string;
  #released: Promise<void> | null = null;
  #release: () => void = () => {};
  #opens = 0;
  #waiting = 0;

  constructor(inner: Disk, heldDir: string) {
    super(inner, (operation) => operation());
    this.#heldDir = heldDir.endsWith("/") ? heldDir : `${heldDir}/`;
  }

  /** Opens of files under the directory so far, held or not. */
  get opens(): number {
    return this.#opens;
  }

  /** Opens waiting for `release`. */
  get waiting(): number {
    return this.#waiting;
  }

  /** From now on, opens under the directory wait for `release`. */
  hold(): void {
    if (this.#released !== null) return;
    this.#released = new Promise<void>((resolve) => (this.#release = resolve));
  }

  /** Lets every waiting open go on, and the later ones through at once. */
  release(): void {
    this.#release();
    this.#released = null;
  }

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    if (path.startsWith(this.#heldDir)) {
      this.#opens++;
      const released = this.#released;
      if (released !== null) {
        this.#waiting++;
        try {
          await released;
        } finally {
          this.#waiting--;
        }
      }
    }
    return await super.open(path, options);
  }
}
