import type { Disk, DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";

export class SimulatedCrash extends Error {
  override name = "SimulatedCrash";
}

/**
 * A NodeDisk that stops at the Nth durable operation (file fsync, directory fsync, unlink,
 * rename): that operation and every later one throw, as if the process died there. What reached
 * the file system before stays, as it would after a process crash.
 */
export class CrashingDisk extends NodeDisk implements Disk {
  durableOps = 0;
  crashed = false;
  readonly #crashAt: number;

  constructor(crashAt: number) {
    super();
    this.#crashAt = crashAt;
  }

  #step(): void {
    if (this.crashed) throw new SimulatedCrash("the process is gone");
    this.durableOps++;
    if (this.durableOps >= this.#crashAt) {
      this.crashed = true;
      throw new SimulatedCrash(`crash at durable operation ${this.durableOps}`);
    }
  }

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    if (this.crashed) throw new SimulatedCrash("the process is gone");
    return this.#wrap(await super.open(path, options));
  }

  override async createExclusive(path: string): Promise<DiskFile> {
    if (this.crashed) throw new SimulatedCrash("the process is gone");
    return this.#wrap(await super.createExclusive(path));
  }

  override fsyncDir(dirPath: string): Promise<void> {
    this.#step();
    return super.fsyncDir(dirPath);
  }

  override unlink(path: string): Promise<void> {
    this.#step();
    return super.unlink(path);
  }

  override rename(fromPath: string, toPath: string): Promise<void> {
    this.#step();
    return super.rename(fromPath, toPath);
  }

  #wrap(file: DiskFile): DiskFile {
    const sync = file.sync.bind(file);
    const writeAt = file.writeAt.bind(file);
    file.sync = () => {
      this.#step();
      return sync();
    };
    file.writeAt = (data, position) => {
      if (this.crashed) return Promise.reject(new SimulatedCrash("the process is gone"));
      return writeAt(data, position);
    };
    return file;
  }
}
