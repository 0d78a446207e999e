import { assert } from "../../runtime/assert.ts";
import {
  batchField,
  batchLengthOverheadBytes,
  type BatchRecord,
  computeBatchCrc,
  decodeRecord,
  recordBatchBytes,
  RecordBatchError,
  recordBatchHeaderBytes,
  recordBatchMagic,
  type RecordHeader,
  writeRecordBatch,
} from "./record_batch.ts";
import {
  decompressionPieceBytes,
  decompressRecords,
  decompressRecordsWhole,
  type Pause,
} from "../compression/batch_compression.ts";

/**
 * The log's batches are Kafka's RecordBatch v2 (`record_batch.ts`, docs/FORMAT.md). This is the
 * log's view of them: messages in and out, headers read for scans and recovery (which must never
 * throw on torn or foreign bytes), and the CRC check. Timestamps are milliseconds in the batch and
 * microseconds (whole milliseconds) in the log's own metadata: index entries, markers, manifests.
 */
export const batchHeaderBytes = recordBatchHeaderBytes;
/** The batch format the log writes and reads: Kafka's magic 2. */
export const batchFormatVersion = recordBatchMagic;

/** A header of a record: names may repeat, order is kept, a value may be null. */
export type { RecordHeader };

/** A message to append, as a producer gives it. */
export interface MessageInput {
  /** Text (stored as its UTF-8) or bytes; null: no key. */
  key: string | Uint8Array | null;
  /** Names to text values, or the ordered list a Kafka record has (names may repeat, values be null). */
  headers: Readonly<Record<string, string>> | readonly RecordHeader[];
  /** The value; null is a null value (a Kafka tombstone), not an empty one. */
  payload: Uint8Array | null;
  /** Milliseconds since the Unix epoch; absent: the server's time at the append. */
  timestampMs?: number;
}

/** A message as the log holds it: Kafka's record model. */
export interface StoredMessage {
  offset: number;
  /** Milliseconds since the Unix epoch. */
  timestampMs: number;
  key: Uint8Array | null;
  headers: readonly RecordHeader[];
  payload: Uint8Array | null;
}

export interface BatchHeader {
  baseOffset: number;
  lengthBytes: number;
  crc32c: number;
  /** The batch's magic byte: `batchFormatVersion` for a batch of this log. */
  formatVersion: number;
  /** Attribute bits 0 to 2: 0 uncompressed, 1 gzip, 2 snappy, 3 lz4, 4 zstd. */
  compressionCode: number;
  /** Attribute bit 3: stamped with log append time, every record's timestamp the max timestamp. */
  logAppendTime: boolean;
  /** Attribute bit 5: a control batch (a transaction marker), which holds no messages to read. */
  control: boolean;
  /** Attribute bit 4: a transactional producer's batch. */
  transactional: boolean;
  /** The producer's id; -1 for a batch of no idempotent producer. */
  producerId: number;
  messageCount: number;
  baseTimestampUs: number;
  maxTimestampUs: number;
  lastOffsetDelta: number;
}

const encoder = new TextEncoder();

/** Messages measured for a batch: their records, timestamps and the batch's whole length. */
export interface PreparedBatch {
  readonly records: readonly BatchRecord[];
  readonly lengthBytes: number;
  readonly baseTimestampMs: number;
  readonly maxTimestampMs: number;
}

/** The headers of a message as a record's list: a map's entries in order, with text values. */
function headerList(headers: MessageInput["headers"]): readonly RecordHeader[] {
  if (Array.isArray(headers)) return headers as readonly RecordHeader[];
  const list: RecordHeader[] = [];
  for (const [name, value] of Object.entries(headers)) list.push({ name, value: encoder.encode(value) });
  return list;
}

/**
 * Measures the batch `messages` make; a message without a timestamp takes `stampMs`, the server's
 * time at the append. The first message's timestamp is the batch's base, as Kafka has it.
 */
export function prepareBatch(messages: readonly MessageInput[], stampMs: number): PreparedBatch {
  assert(messages.length > 0, "Cannot encode an empty batch");
  const baseTimestampMs = messages[0]!.timestampMs ?? stampMs;
  let maxTimestampMs = baseTimestampMs;
  const records = messages.map((m, offsetDelta): BatchRecord => {
    const timestampMs = m.timestampMs ?? stampMs;
    maxTimestampMs = Math.max(maxTimestampMs, timestampMs);
    return {
      offsetDelta,
      timestampDelta: timestampMs - baseTimestampMs,
      key: typeof m.key === "string" ? encoder.encode(m.key) : m.key,
      value: m.payload,
      headers: headerList(m.headers),
    };
  });
  return { records, lengthBytes: recordBatchBytes(records), baseTimestampMs, maxTimestampMs };
}

/**
 * Writes a prepared batch into `target`, exactly its length: the log encodes straight into its
 * write buffer, so a produce costs no buffer of its own.
 */
export function writeBatchInto(target: Uint8Array, baseOffset: number, batch: PreparedBatch): void {
  assert(Number.isSafeInteger(baseOffset) && baseOffset >= 0, "batch base offset must be a safe integer");
  assert(target.length === batch.lengthBytes, "a batch's target must be exactly its length");
  writeRecordBatch(target, batch.records, {
    baseOffset,
    baseTimestampMs: batch.baseTimestampMs,
    maxTimestampMs: batch.maxTimestampMs,
    timestampType: "create_time",
  });
}

/** Encodes messages as one batch of its own; a message without a timestamp takes `stampMs`. */
export function encodeBatch(
  baseOffset: number,
  stampMs: number,
  messages: readonly MessageInput[],
): Uint8Array {
  const batch = prepareBatch(messages, stampMs);
  const bytes = new Uint8Array(batch.lengthBytes);
  writeBatchInto(bytes, baseOffset, batch);
  return bytes;
}

/**
 * Reads a batch header at `pos`, or null when fewer than a header's bytes remain. Never throws:
 * torn or foreign bytes give a header that `isPlausibleHeader` refuses.
 */
export function decodeBatchHeader(bytes: Uint8Array, pos = 0): BatchHeader | null {
  if (bytes.length - pos < batchHeaderBytes) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset + pos, batchHeaderBytes);
  return {
    baseOffset: Number(view.getBigInt64(batchField.baseOffset)),
    lengthBytes: view.getInt32(batchField.batchLength) + batchLengthOverheadBytes,
    crc32c: view.getUint32(batchField.crc),
    formatVersion: view.getInt8(batchField.magic),
    compressionCode: view.getInt16(batchField.attributes) & 0x07,
    logAppendTime: (view.getInt16(batchField.attributes) & 0x08) !== 0,
    control: (view.getInt16(batchField.attributes) & 0x20) !== 0,
    transactional: (view.getInt16(batchField.attributes) & 0x10) !== 0,
    producerId: Number(view.getBigInt64(batchField.producerId)),
    messageCount: view.getInt32(batchField.recordCount),
    baseTimestampUs: Number(view.getBigInt64(batchField.baseTimestamp)) * 1000,
    maxTimestampUs: Number(view.getBigInt64(batchField.maxTimestamp)) * 1000,
    lastOffsetDelta: view.getInt32(batchField.lastOffsetDelta),
  };
}

/** True when a header is self-consistent; says nothing about the bytes it covers. */
export function isPlausibleHeader(header: BatchHeader): boolean {
  return header.formatVersion === batchFormatVersion &&
    Number.isSafeInteger(header.baseOffset) && header.baseOffset >= 0 &&
    header.lengthBytes >= batchHeaderBytes &&
    header.messageCount >= 1 &&
    header.lastOffsetDelta === header.messageCount - 1 &&
    header.compressionCode <= 4 &&
    Number.isSafeInteger(header.maxTimestampUs) && header.baseTimestampUs >= 0 &&
    header.maxTimestampUs >= header.baseTimestampUs;
}

/** True when `batch` (exactly one whole batch) carries a matching CRC32C. */
export function verifyBatch(batch: Uint8Array): boolean {
  const header = decodeBatchHeader(batch);
  if (header === null || header.lengthBytes !== batch.length) return false;
  return computeBatchCrc(batch) === header.crc32c;
}

/** The headers of every message that has none: one frozen list instead of an empty one per message. */
const noHeaders: readonly RecordHeader[] = Object.freeze([]);

/**
 * Records decoded in one step at most (and at most one piece of their bytes): a batch of many small
 * records is decoded in steps too, 1024 records of 100 bytes taking about 0.3 ms (docs/FORMAT.md,
 * "Compressed batches").
 */
export const decodedRecordsPerStepMax = 1024;

/**
 * True when a batch's messages decode in one step: uncompressed, and within one step's records and
 * piece of bytes. Its messages are then `decodeMessages`'s at once; any other's are
 * `decodeMessagesInPieces`'s.
 */
export function decodesInOneStep(header: BatchHeader): boolean {
  return header.compressionCode === 0 && header.messageCount <= decodedRecordsPerStepMax &&
    header.lengthBytes - batchHeaderBytes <= decompressionPieceBytes;
}

/**
 * Decodes the messages of one whole, verified batch in one synchronous run (a compressed one is
 * decompressed first): for a batch that `decodesInOneStep`, and for tests and tools.
 */
export function decodeMessages(batch: Uint8Array): StoredMessage[] {
  const header = wholeBatchHeader(batch);
  const records = header.compressionCode === 0
    ? batch.subarray(batchHeaderBytes)
    : decompressRecordsWhole(header.compressionCode, batch.subarray(batchHeaderBytes));
  const decoding = new RecordsDecoding(header, records);
  while (!decoding.done) decoding.step();
  return decoding.messages;
}

/**
 * Decodes the messages of one whole, verified batch in steps, awaiting `pause` between two: the
 * decompression of a compressed one (`decompressRecords`), then the records, at most
 * `decodedRecordsPerStepMax` records and one piece of bytes per step. Throws RecordBatchError.
 */
export async function decodeMessagesInPieces(batch: Uint8Array, pause: Pause): Promise<StoredMessage[]> {
  const header = wholeBatchHeader(batch);
  const records = header.compressionCode === 0
    ? batch.subarray(batchHeaderBytes)
    : await decompressRecords(header.compressionCode, batch.subarray(batchHeaderBytes), pause);
  const decoding = new RecordsDecoding(header, records);
  if (header.compressionCode !== 0) await pause();
  decoding.step();
  while (!decoding.done) {
    await pause();
    decoding.step();
  }
  return decoding.messages;
}

function wholeBatchHeader(batch: Uint8Array): BatchHeader {
  const header = decodeBatchHeader(batch);
  assert(header !== null && header.lengthBytes === batch.length, "decoding messages needs one whole batch");
  return header;
}

/** A batch's records turned into messages, a step at a time. */
class RecordsDecoding {
  readonly messages: StoredMessage[] = [];
  readonly #header: BatchHeader;
  readonly #records: Uint8Array;
  readonly #baseTimestampMs: number;
  #at = 0;
  #done = false;

  constructor(header: BatchHeader, records: Uint8Array) {
    this.#header = header;
    this.#records = records;
    this.#baseTimestampMs = header.baseTimestampUs / 1000;
  }

  get done(): boolean {
    return this.#done;
  }

  /** Decodes up to `decodedRecordsPerStepMax` records, or about one piece of their bytes. */
  step(): void {
    const header = this.#header;
    const records = this.#records;
    const stepEnd = Math.min(header.messageCount, this.messages.length + decodedRecordsPerStepMax);
    const stepStartAt = this.#at;
    while (this.messages.length < stepEnd && this.#at - stepStartAt < decompressionPieceBytes) {
      const { record, next } = decodeRecord(records, this.#at);
      this.messages.push({
        offset: header.baseOffset + record.offsetDelta,
        // With log append time, every record's timestamp is the batch's max timestamp.
        timestampMs: header.logAppendTime
          ? header.maxTimestampUs / 1000
          : this.#baseTimestampMs + record.timestampDelta,
        // Views, not copies: every read allocates a fresh window, so nothing else writes under them.
        key: record.key,
        headers: record.headers.length === 0 ? noHeaders : record.headers,
        payload: record.value,
      });
      this.#at = next;
    }
    if (this.messages.length < header.messageCount) return;
    if (this.#at !== records.length) {
      throw new RecordBatchError(
        "corrupt",
        `${records.length - this.#at} bytes follow the batch's ${header.messageCount} records`,
      );
    }
    this.#done = true;
  }
}
