import { concatBytes } from "../../runtime/memory/buffers.ts";
import { pack, unpack } from "msgpackr";
import { assert } from "../../runtime/assert.ts";
import { crc32c } from "../../runtime/checksum/crc32c.ts";
import type { Disk, DiskFile } from "../../runtime/disk/disk.ts";
import { dirOf, readUpTo, replaceFile } from "../../runtime/disk/file_ops.ts";
import { QueueFullError } from "../../runtime/wait_errors.ts";
import {
  type ApplyHook,
  type ControlCommand,
  ControlEpochMismatchError,
  type ControlLog,
  ControlLogClosedError,
  type SubmitPrecondition,
} from "./control_log.ts";

const headerBytes = 8;
/** By default compaction rewrites the file once it is larger than this. */
const compactAboveBytesDefault = 1024 * 1024;
/** Bound on submissions waiting for the writer, by default. */
export const submissionsQueuedMaxDefault = 10_000;

interface Record {
  index: number;
  command: ControlCommand;
}

/** The local log's epoch: one node leads every partition it holds, so it never changes. */
export const localControlEpoch = 0;

/**
 * The single-node control log: records `[length u32][crc32c u32][msgpack {index, command}]`
 * appended to one file and fsynced before they count as committed; committed records are applied
 * in order. At open the records are read (a torn tail is cut); `replay` applies every one again:
 * apply is idempotent (the floor's apply is a max with a generation check), and replaying is what
 * repairs a crash between a command's commit and its state machine's superblock write.
 */
export class LocalControlLog implements ControlLog {
  readonly #disk: Disk;
  readonly #path: string;
  /** Set by `replay`; commands are submitted only after it. */
  #apply: ApplyHook | null = null;
  /** The records read at open, until `replay` applies them. */
  #unreplayed: Record[] | null;
  #file: DiskFile;
  #sizeBytes: number;
  #committed: number;
  #snapshotIndex = 0;
  #writing: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #closed = false;
  readonly #compactAboveBytes: number;
  readonly #submissionsQueuedMax: number;

  private constructor(
    disk: Disk,
    path: string,
    file: DiskFile,
    sizeBytes: number,
    records: Record[],
    compactAboveBytes: number,
    submissionsQueuedMax: number,
  ) {
    assert(submissionsQueuedMax >= 1, "a control log takes at least one submission at a time");
    this.#compactAboveBytes = compactAboveBytes;
    this.#submissionsQueuedMax = submissionsQueuedMax;
    this.#disk = disk;
    this.#path = path;
    this.#file = file;
    this.#sizeBytes = sizeBytes;
    this.#committed = records.at(-1)?.index ?? 0;
    this.#unreplayed = records;
  }

  /** Opens (or creates) the log at `path` and reads its records; `replay` applies them. */
  static async open(
    disk: Disk,
    path: string,
    compactAboveBytes = compactAboveBytesDefault,
    submissionsQueuedMax = submissionsQueuedMaxDefault,
  ): Promise<LocalControlLog> {
    await disk.mkdirp(dirOf(path));
    const file = await disk.open(path, { create: true });
    const size = await file.sizeBytes();
    const bytes = await readUpTo(file, 0, size);
    const { records, validBytes } = decodeRecords(bytes);
    if (validBytes < size) {
      await file.truncate(validBytes);
      await file.sync();
    }
    return new LocalControlLog(
      disk,
      path,
      file,
      validBytes,
      records,
      compactAboveBytes,
      submissionsQueuedMax,
    );
  }

  epoch(): number {
    return localControlEpoch;
  }

  async replay(apply: ApplyHook): Promise<void> {
    const records = this.#unreplayed;
    assert(records !== null && this.#apply === null, "Cannot replay a control log twice");
    this.#unreplayed = null;
    for (const r of records) await apply(r.index, r.command);
    this.#apply = apply;
  }

  committed(): number {
    return this.#committed;
  }

  submit(command: ControlCommand, precondition: SubmitPrecondition): Promise<number> {
    const apply = this.#apply;
    assert(apply !== null, "Cannot submit a control command before the log is replayed");
    // An upload that ends while the server stops: its floor is not committed, and is submitted
    // again after the restart (the segment is uploaded, and found so).
    if (this.#closed) return Promise.reject(new ControlLogClosedError());
    if (precondition.expectedEpoch !== localControlEpoch) {
      return Promise.reject(new ControlEpochMismatchError(precondition.expectedEpoch, localControlEpoch));
    }
    // A refusal is a failed submission: the upload core submits the same command again later.
    if (this.#queued >= this.#submissionsQueuedMax) {
      return Promise.reject(new QueueFullError("submit a control command", this.#submissionsQueuedMax));
    }
    this.#queued++;
    // The chain goes on after a failed append: that submission's caller heard of its failure.
    const done = this.#writing.catch(() => {}).then(async () => {
      const index = this.#committed + 1;
      const record = encodeRecord({ index, command });
      await this.#file.writeAt(record, this.#sizeBytes);
      await this.#file.sync();
      this.#sizeBytes += record.length;
      this.#committed = index;
      await apply(index, command);
      return index;
    }).finally(() => this.#queued--);
    this.#writing = done;
    return done;
  }

  snapshot(index: number): Promise<void> {
    assert(index <= this.#committed, "Cannot snapshot past the committed index");
    this.#snapshotIndex = Math.max(this.#snapshotIndex, index);
    if (this.#sizeBytes <= this.#compactAboveBytes) return Promise.resolve();
    // As above: the write before reported its own failure; the compaction runs after it either way.
    const compacting = this.#writing.catch(() => {}).then(() => this.#compact());
    this.#writing = compacting;
    return compacting;
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Closing waits for the last write to end; its failure went to its caller.
    await this.#writing.catch(() => {});
    await this.#file.close();
  }

  /**
   * Rewrites the file without the records every snapshot already holds (`replaceFile`: temp,
   * fsync, rename, directory fsync), then reopens it; the old handle is closed once replaced.
   */
  async #compact(): Promise<void> {
    const bytes = await readUpTo(this.#file, 0, this.#sizeBytes);
    const keep = decodeRecords(bytes).records.filter((r) => r.index > this.#snapshotIndex);
    const rewritten = concatBytes(keep.map(encodeRecord));
    await replaceFile(this.#disk, this.#path, rewritten);
    await this.#file.close();
    this.#file = await this.#disk.open(this.#path);
    this.#sizeBytes = rewritten.length;
  }

  /** For tests and gauges: the file's current size. */
  get sizeBytes(): number {
    return this.#sizeBytes;
  }
}

function encodeRecord(record: Record): Uint8Array {
  const payload = pack(record);
  const bytes = new Uint8Array(headerBytes + payload.length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, payload.length, true);
  view.setUint32(4, crc32c(payload), true);
  bytes.set(payload, headerBytes);
  return bytes;
}

/** Whole, checksum-valid records from the start; stops at the first torn or failing one. */
function decodeRecords(bytes: Uint8Array): { records: Record[]; validBytes: number } {
  const records: Record[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  // Each pass consumes one record or stops, so the file's size bounds the loop.
  while (at + headerBytes <= bytes.length) {
    const length = view.getUint32(at, true);
    const end = at + headerBytes + length;
    if (end > bytes.length) break;
    const payload = bytes.subarray(at + headerBytes, end);
    if (crc32c(payload) !== view.getUint32(at + 4, true)) break;
    records.push(unpack(payload) as Record);
    at = end;
  }
  return { records, validBytes: at };
}
