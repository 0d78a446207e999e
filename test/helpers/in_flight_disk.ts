import { AroundDisk } from "../../src/runtime/around_disk.ts";
import type { Disk } from "../../src/runtime/disk.ts";

/**
 * A Disk that counts its operations in flight, so a harness on virtual time can stop the clock
 * while real I/O runs. Without it, a slow or busy disk lets virtual time run ahead of the work
 * it times: deadlines expire and periodic passes fall due again while one read is still going.
 */
export class InFlightDisk extends AroundDisk {
  #inFlight = 0;

  constructor(inner: Disk) {
    super(inner, async (operation) => {
      this.#inFlight++;
      try {
        return await operation();
      } finally {
        this.#inFlight--;
      }
    });
  }

  /** Operations started and not yet settled, files' included. */
  get inFlight(): number {
    return this.#inFlight;
  }
}
