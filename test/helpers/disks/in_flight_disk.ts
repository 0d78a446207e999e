import { AroundDisk } from "../../../src/runtime/disk/around_disk.ts";
import type { Disk } from "../../../src/runtime/disk/disk.ts";

/**
 * A Disk that counts its operations in flight, so a harness on virtual time can stop the clock
 * while real I/O runs. Without it, a slow or busy disk lets virtual time run ahead of the work
 * it times: deadlines expire and periodic passes fall due again while one read is still going.
 */
export class InFlightDisk extends AroundDisk {
  #inFlight = 0;
  #idleWaiters: (() => void)[] = [];

  constructor(inner: Disk) {
    super(inner, async (operation) => {
      this.#inFlight++;
      try {
        return await operation();
      } finally {
        this.#inFlight--;
        if (this.#inFlight === 0) { for (const resolve of this.#idleWaiters.splice(0)) resolve(); }
      }
    });
  }

  /** Operations started and not yet settled, files' included. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Waits until no operation is in flight, checked again a turn of the loop after each time the
   * count falls to 0 (a caller resuming from one operation may start the next), or until
   * `deadlineAtMs` of real time. Resolves with whether the disk went quiet.
   */
  async quiet(deadlineAtMs: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, deadlineAtMs - Date.now()));
    });
    try {
      while (this.#inFlight > 0 && Date.now() < deadlineAtMs) {
        await Promise.race([new Promise<void>((resolve) => this.#idleWaiters.push(resolve)), deadline]);
        await new Promise((resolve) => setImmediate(resolve));
      }
      return this.#inFlight === 0;
    } finally {
      clearTimeout(timer);
    }
  }
}
