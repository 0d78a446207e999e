import { KafkaDecodeError, KafkaReader, type KafkaWriter } from "./kafka_codec.ts";
import { assert } from "../../runtime/assert.ts";

/**
 * The request header every Kafka request starts with, and the response header that answers it.
 * Request header v1 is api key, api version, correlation id and client id (an int16-length nullable
 * string); v2, for a flexible version of its API, adds tagged fields after the client id (which stays
 * int16-length). Response header v0 is the correlation id; v1, for flexible versions, adds tagged
 * fields, except for ApiVersions, whose response header is always v0 so that a client can read the
 * answer of a version it asked for before it knows which versions are served.
 */

export const apiKey = {
  produce: 0,
  fetch: 1,
  listOffsets: 2,
  metadata: 3,
  offsetCommit: 8,
  offsetFetch: 9,
  findCoordinator: 10,
  joinGroup: 11,
  heartbeat: 12,
  leaveGroup: 13,
  syncGroup: 14,
  describeGroups: 15,
  listGroups: 16,
  saslHandshake: 17,
  apiVersions: 18,
  createTopics: 19,
  deleteTopics: 20,
  initProducerId: 22,
  addPartitionsToTxn: 24,
  addOffsetsToTxn: 25,
  endTxn: 26,
  txnOffsetCommit: 28,
  describeConfigs: 32,
  saslAuthenticate: 36,
  deleteGroups: 42,
  describeProducers: 61,
  describeTransactions: 65,
  listTransactions: 66,
} as const;

/** The first flexible version of each API (Kafka's `flexibleVersions`); absent: none is. */
const firstFlexibleVersion: Readonly<Record<number, number>> = {
  [apiKey.produce]: 9,
  [apiKey.fetch]: 12,
  [apiKey.listOffsets]: 6,
  [apiKey.metadata]: 9,
  [apiKey.offsetCommit]: 8,
  [apiKey.offsetFetch]: 6,
  [apiKey.findCoordinator]: 3,
  [apiKey.joinGroup]: 6,
  [apiKey.heartbeat]: 4,
  [apiKey.leaveGroup]: 4,
  [apiKey.syncGroup]: 4,
  [apiKey.describeGroups]: 5,
  [apiKey.listGroups]: 3,
  [apiKey.apiVersions]: 3,
  [apiKey.createTopics]: 5,
  [apiKey.deleteTopics]: 4,
  [apiKey.initProducerId]: 2,
  [apiKey.addPartitionsToTxn]: 3,
  [apiKey.addOffsetsToTxn]: 3,
  [apiKey.endTxn]: 3,
  [apiKey.txnOffsetCommit]: 3,
  [apiKey.describeConfigs]: 4,
  [apiKey.saslAuthenticate]: 2,
  [apiKey.deleteGroups]: 2,
  [apiKey.describeProducers]: 0,
  [apiKey.describeTransactions]: 0,
  [apiKey.listTransactions]: 0,
};

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** Whether `version` of the API is a flexible one (compact fields, tagged fields). */
export function isFlexible(api: number, version: number): boolean {
  const first = firstFlexibleVersion[api];
  return first !== undefined && version >= first;
}

/**
 * Reads a frame's request header; the reader is left at the body. An unknown API key still reads
 * (its header is v1), so that the answer can name it.
 */
export function readRequestHeader(frame: Uint8Array): { header: RequestHeader; body: KafkaReader } {
  const reader = new KafkaReader(frame);
  const api = reader.int16();
  const apiVersion = reader.int16();
  const correlationId = reader.int32();
  const clientId = reader.nullableString();
  if (apiVersion < 0) throw new KafkaDecodeError(`api version ${apiVersion} is negative`);
  if (isFlexible(api, apiVersion)) reader.skipTaggedFields();
  return { header: { apiKey: api, apiVersion, correlationId, clientId }, body: reader };
}

/** Writes the response header for a request with `header`. */
export function writeResponseHeader(writer: KafkaWriter, header: RequestHeader): void {
  writer.int32(header.correlationId);
  if (header.apiKey !== apiKey.apiVersions && isFlexible(header.apiKey, header.apiVersion)) {
    writer.emptyTaggedFields();
  }
}

/**
 * Cuts a Kafka connection's byte stream into frames, sans I/O: bytes in (`push`), whole frames out.
 * Each frame is an int32 size followed by that many bytes (a request header and body). A size below
 * the smallest request header or above `maxFrameBytes` is a malformed stream: `push` throws
 * `FrameError` and the connection is to be closed. It holds at most one partial frame, allocated
 * once its size is known, so what a connection buffers is bounded by `maxFrameBytes`.
 */
export class FrameError extends Error {
  override name = "FrameError";
  constructor(reason: string) {
    super(`Cannot read Kafka frame: ${reason}`);
  }
}

/** The smallest request header: api key, api version and correlation id, and a null client id. */
export const requestHeaderBytesMin = 2 + 2 + 4 + 2;

const sizeFieldBytes = 4;

export class FrameSplitter {
  readonly #maxFrameBytes: number;
  readonly #copyInto: ((sizeBytes: number) => Uint8Array) | null;
  /** The size field of the next frame, as far as it has come. */
  readonly #sizeField = new Uint8Array(sizeFieldBytes);
  #sizeFieldBytes = 0;
  /** The frame being gathered, allocated once its size is known, and how much of it has come. */
  #frame: Uint8Array | null = null;
  #frameFilled = 0;

  /**
   * With `copyInto`, every frame is copied into a buffer it gives (exactly the frame's size), never a
   * view of a chunk: the caller may then reuse its read buffer as soon as `push` returns, and may lend
   * frame buffers from a pool. Without it, a frame may be a view of the chunk that held it whole.
   */
  constructor(maxFrameBytes: number, copyInto: ((sizeBytes: number) => Uint8Array) | null = null) {
    if (!(maxFrameBytes >= requestHeaderBytesMin)) {
      throw new RangeError(`Cannot split frames of at most ${maxFrameBytes} bytes`);
    }
    this.#maxFrameBytes = maxFrameBytes;
    this.#copyInto = copyInto;
  }

  /** Bytes held of a frame not yet whole. */
  get bufferedBytes(): number {
    return this.#sizeFieldBytes + this.#frameFilled;
  }

  /**
   * Takes the next bytes of the stream; appends the frames they completed to `frames` (each without
   * its size field) and returns it. Without `copyInto` a frame may be a view of `chunk`. When a size
   * is malformed it throws, and the frames completed before it are in `frames` still, for the
   * caller to give back what it lent.
   */
  push(chunk: Uint8Array, frames: Uint8Array[] = []): Uint8Array[] {
    let rest = chunk;
    while (rest.length > 0) {
      if (this.bufferedBytes === 0 && rest.length >= sizeFieldBytes) {
        // The common case: a whole frame within the chunk, taken in one step.
        const size = this.#sizeOf(rest);
        if (rest.length >= sizeFieldBytes + size) {
          frames.push(this.#framed(rest.subarray(sizeFieldBytes, sizeFieldBytes + size)));
          rest = rest.subarray(sizeFieldBytes + size);
          continue;
        }
      }
      rest = this.#gather(rest, frames);
    }
    return frames;
  }

  /**
   * Gives up the frame being gathered: returns its buffer (from `copyInto`, for the caller to give
   * back), or null when none was begun. The stream is not to be pushed again.
   */
  discard(): Uint8Array | null {
    const partial = this.#frame;
    this.#frame = null;
    this.#frameFilled = 0;
    this.#sizeFieldBytes = 0;
    return partial;
  }

  /** Copies bytes into the partial frame (its size field first); returns what is left after it. */
  #gather(chunk: Uint8Array, frames: Uint8Array[]): Uint8Array {
    let rest = chunk;
    if (this.#frame === null) {
      const taken = Math.min(sizeFieldBytes - this.#sizeFieldBytes, rest.length);
      this.#sizeField.set(rest.subarray(0, taken), this.#sizeFieldBytes);
      this.#sizeFieldBytes += taken;
      rest = rest.subarray(taken);
      if (this.#sizeFieldBytes < sizeFieldBytes) return rest;
      const size = this.#sizeOf(this.#sizeField);
      this.#frame = this.#copyInto === null ? new Uint8Array(size) : this.#copyInto(size);
      assert(this.#frame.length === size, "a frame's buffer is exactly its size");
    }
    const frame = this.#frame;
    const taken = Math.min(frame.length - this.#frameFilled, rest.length);
    frame.set(rest.subarray(0, taken), this.#frameFilled);
    this.#frameFilled += taken;
    if (this.#frameFilled === frame.length) {
      frames.push(frame);
      this.#frame = null;
      this.#frameFilled = 0;
      this.#sizeFieldBytes = 0;
    }
    return rest.subarray(taken);
  }

  /** A whole frame found in a chunk: the view itself, or its copy into a buffer of `copyInto`'s. */
  #framed(view: Uint8Array): Uint8Array {
    if (this.#copyInto === null) return view;
    const frame = this.#copyInto(view.length);
    assert(frame.length === view.length, "a frame's buffer is exactly its size");
    frame.set(view);
    return frame;
  }

  #sizeOf(bytes: Uint8Array): number {
    const size = new DataView(bytes.buffer, bytes.byteOffset, sizeFieldBytes).getInt32(0);
    if (size < requestHeaderBytesMin) {
      throw new FrameError(`a frame of ${size} bytes is shorter than a request header`);
    }
    if (size > this.#maxFrameBytes) {
      throw new FrameError(`a frame of ${size} bytes is over max_frame_bytes ${this.#maxFrameBytes}`);
    }
    return size;
  }
}
