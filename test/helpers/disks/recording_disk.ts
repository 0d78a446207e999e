import type { CreateOptions, Disk, DiskFile, OpenOptions } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";

/**
 * A NodeDisk that records, in order, the operations that change what survives a crash: file
 * writes and fsyncs, directory fsyncs, unlinks, renames, creations. Each entry is
 * `operation name-of-file` (the file's base name, or `dir` for a directory fsync).
 */
export class RecordingDisk extends NodeDisk implements Disk {
  readonly ops: string[] = [];

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    if (options?.create === true) this.ops.push(`open+create ${baseName(path)}`);
    return this.#wrap(path, await super.open(path, options));
  }

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    this.ops.push(`create ${baseName(path)}`);
    return this.#wrap(path, await super.createExclusive(path, options));
  }

  override unlink(path: string): Promise<void> {
    this.ops.push(`unlink ${baseName(path)}`);
    return super.unlink(path);
  }

  override rename(fromPath: string, toPath: string): Promise<void> {
    this.ops.push(`rename ${baseName(fromPath)} ${baseName(toPath)}`);
    return super.rename(fromPath, toPath);
  }

  override fsyncDir(dirPath: string): Promise<void> {
    this.ops.push("fsync dir");
    return super.fsyncDir(dirPath);
  }

  #wrap(path: string, file: DiskFile): DiskFile {
    const sync = file.sync.bind(file);
    file.sync = () => {
      this.ops.push(`fsync ${baseName(path)}`);
      return sync();
    };
    const writeAt = file.writeAt.bind(file);
    file.writeAt = (data, position) => {
      this.ops.push(`write ${baseName(path)}`);
      return writeAt(data, position);
    };
    return file;
  }
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}
