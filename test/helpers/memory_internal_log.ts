import { NotLeaderError } from "../../src/broker/broker_errors.ts";
import type {
  AppendedRecords,
  InternalLog,
  InternalRecordCodec,
  ReplayedRecords,
} from "../../src/broker/internal_topic.ts";
import {
  decodeOffsetsRecord,
  encodeOffsetsRecord,
  type OffsetsRecord,
} from "../../src/groups/offsets/offsets_records.ts";

interface StoredRecord {
  offset: number;
  key: Uint8Array;
  value: Uint8Array | null;
}

/**
 * A coordinator's internal topic in memory, for its tests: each partition a list of encoded records
 * with a log start, a leader epoch the test sets (null: another node leads), and appends that can
 * be made to fail or to wait until the test lets them through.
 */
export class MemoryInternalLog<R> implements InternalLog<R> {
  readonly #codec: InternalRecordCodec<R>;
  readonly #records: StoredRecord[][];
  readonly #nextOffsets: number[];
  readonly epochs: (number | null)[];
  /** The next append fails with this, once. */
  failNext: Error | null = null;
  /** While set, appends wait for it. */
  gate: Promise<void> | null = null;
  appends = 0;
  trims: { partition: number; offset: number }[] = [];

  constructor(partitions: number, codec: InternalRecordCodec<R>) {
    this.#codec = codec;
    this.#records = Array.from({ length: partitions }, () => []);
    this.#nextOffsets = Array.from({ length: partitions }, () => 0);
    this.epochs = Array.from({ length: partitions }, () => 0);
  }

  partitionCount(): number {
    return this.#records.length;
  }

  ensure(): Promise<void> {
    return Promise.resolve();
  }

  leaderEpoch(partition: number): number | null {
    return this.epochs[partition] ?? null;
  }

  async append(partition: number, records: readonly R[]): Promise<AppendedRecords> {
    this.appends += 1;
    if (this.gate !== null) await this.gate;
    if (this.failNext !== null) {
      const error = this.failNext;
      this.failNext = null;
      throw error;
    }
    if (this.epochs[partition] === null) throw new NotLeaderError(`not the leader of ${partition}`, null);
    const baseOffset = this.#nextOffsets[partition]!;
    let bytes = 0;
    for (const record of records) {
      const { key, value } = this.#codec.encode(record);
      bytes += key.length + (value?.length ?? 0);
      this.#records[partition]!.push({ offset: this.#nextOffsets[partition]!++, key, value });
    }
    return { baseOffset, bytes };
  }

  async replay(partition: number, visit: (record: R) => void): Promise<ReplayedRecords> {
    await Promise.resolve();
    let bytes = 0;
    for (const r of this.#records[partition]!) {
      bytes += r.key.length + (r.value?.length ?? 0);
      visit(this.#codec.decode(r.key, r.value));
    }
    return { nextOffset: this.#nextOffsets[partition]!, bytes };
  }

  trimBelow(partition: number, offset: number): Promise<void> {
    this.trims.push({ partition, offset });
    this.#records[partition] = this.#records[partition]!.filter((r) => r.offset >= offset);
    return Promise.resolve();
  }

  /** The decoded records a partition holds now. */
  records(partition: number): R[] {
    return this.#records[partition]!.map((r) => this.#codec.decode(r.key, r.value));
  }
}

/** `__consumer_offsets` in memory, for the group coordinator's tests. */
export class MemoryOffsetsLog extends MemoryInternalLog<OffsetsRecord> {
  constructor(partitions: number) {
    super(partitions, { encode: encodeOffsetsRecord, decode: decodeOffsetsRecord });
  }
}
