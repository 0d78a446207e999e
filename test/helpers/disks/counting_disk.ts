import type { Disk, DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";

/** A NodeDisk that counts file fsyncs and writes (to observe group commit) and the bytes files read. */
export class CountingDisk extends NodeDisk implements Disk {
  fileSyncs = 0;
  fileWrites = 0;
  fileReadBytes = 0;

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return this.#wrap(await super.open(path, options));
  }

  override async createExclusive(path: string): Promise<DiskFile> {
    return this.#wrap(await super.createExclusive(path));
  }

  #wrap(file: DiskFile): DiskFile {
    const sync = file.sync.bind(file);
    file.sync = () => {
      this.fileSyncs++;
      return sync();
    };
    const writeAt = file.writeAt.bind(file);
    file.writeAt = (data, position) => {
      this.fileWrites++;
      return writeAt(data, position);
    };
    const readAt = file.readAt.bind(file);
    file.readAt = async (buffer, position) => {
      const read = await readAt(buffer, position);
      this.fileReadBytes += read;
      return read;
    };
    return file;
  }
}
