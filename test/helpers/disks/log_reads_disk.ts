import { setTimeout as sleep } from "node:timers/promises";
import { DiskError, type DiskFile, type OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";

/** One read of a `.log` file, in the order the reads started. */
export interface LogRead {
  position: number;
  lengthBytes: number;
}

/**
 * A NodeDisk that notes every read of a segment's `.log` as it starts, can make one of them fail
 * after a delay, and counts closes of a `.log` while a read of it was still running.
 */
export class LogReadsDisk extends NodeDisk {
  readonly reads: LogRead[] = [];
  /** The read (by its index in `reads`) that fails, `delayMs` after it starts. */
  failRead: { index: number; delayMs: number } | null = null;
  closesUnderRead = 0;
  #readFailed!: () => void;
  /** Resolves once the read `failRead` names has failed. */
  readonly readFailed = new Promise<void>((resolve) => (this.#readFailed = resolve));

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    const file = await super.open(path, options);
    if (!path.endsWith(".log")) return file;
    let readsInFlight = 0;
    const readAt = file.readAt.bind(file);
    file.readAt = async (buffer, position) => {
      const index = this.reads.push({ position, lengthBytes: buffer.length }) - 1;
      readsInFlight++;
      try {
        if (this.failRead?.index === index) {
          await sleep(this.failRead.delayMs);
          this.#readFailed();
          throw new DiskError("io", "read", path);
        }
        return await readAt(buffer, position);
      } finally {
        readsInFlight--;
      }
    };
    const close = file.close.bind(file);
    file.close = () => {
      if (readsInFlight > 0) this.closesUnderRead++;
      return close();
    };
    return file;
  }
}
