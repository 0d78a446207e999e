import { assert } from "../runtime/assert.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import { Crc32Stream } from "../runtime/checksum/crc32.ts";
import type { Rng } from "../runtime/rng.ts";
import {
  type BodySource,
  checkKey,
  type DeleteResult,
  type GetOptions,
  keysPerRequestMax,
  type ListOptions,
  type ListPage,
  type ObjectHead,
  type ObjectStore,
  type OpOptions,
  type PieceSink,
  type PutOptions,
  type PutResult,
  toPieces,
} from "./object_store.ts";
import {
  AuthError,
  CorruptError,
  MalformedError,
  NotFoundError,
  NotModifiedError,
  type ObjectStoreError,
  PreconditionFailedError,
  ThrottledError,
  TransportError,
} from "./object_store_errors.ts";

export type SimOperation = "put" | "get" | "head" | "list" | "delete";

/** Probabilities per attempt, per operation kind. */
export interface SimErrorRates {
  /** A 500: transient. */
  transient?: number;
  /** A non-transient failure (an unexpected 4xx). */
  nonTransient?: number;
  /** 403. */
  auth?: number;
  /** 503 SlowDown. */
  throttle?: number;
  /** The operation takes effect but the reply never arrives: the caller times out. */
  lostReply?: number;
}

export interface SimFaults {
  errorRates?: Partial<Record<SimOperation, SimErrorRates>>;
  /** Latency per attempt, uniform in [min, max] milliseconds of the clock. */
  latencyMs?: { min: number; max: number };
  /** Every attempt that starts inside one of these windows fails as unreachable. */
  outages?: { fromMs: number; toMs: number }[];
  /**
   * How far the store's wall clock runs ahead of the server's (negative: behind): what its
   * LastModified dates are off by.
   */
  wallSkewMs?: number;
}

export interface SimRecord {
  op: SimOperation;
  key: string;
  atMs: number;
  outcome: "ok" | "error" | "lost";
  error?: string;
  bytes?: number;
}

interface SimObject {
  /** The object's bytes as received, piece by piece: never one whole-object buffer. */
  pieces: Uint8Array[];
  sizeBytes: number;
  metadata: Record<string, string>;
  etag: string;
  createdAtMs: number;
  /** Wall-clock time of the write, as S3's LastModified. */
  lastModifiedMs: number;
}

/** How long a lost reply hangs when the caller set no timeout. */
const lostReplyHangMsDefault = 30_000;
/** Bound on the operation record; the oldest entries go first. */
const recordsMax = 100_000;

/**
 * An in-memory object store for tests and the simulator. Real bytes are stored; faults, latency
 * and outages are decided by the seeded `Rng` and the `Clock`, so a seed replays exactly. Every
 * operation is recorded for assertions (`records`, `count`).
 */
export class SimObjectStore implements ObjectStore {
  faults: SimFaults;
  readonly #clock: Clock;
  readonly #rng: Rng;
  readonly #objects = new Map<string, SimObject>();
  readonly #records: SimRecord[] = [];

  constructor(clock: Clock, rng: Rng, faults: SimFaults = {}) {
    this.#clock = clock;
    this.#rng = rng;
    this.faults = faults;
  }

  get records(): readonly SimRecord[] {
    return this.#records;
  }

  /** How many attempts of `op` were made (optionally only on `key`). */
  count(op: SimOperation, key?: string): number {
    return this.#records.filter((r) => r.op === op && (key === undefined || r.key === key)).length;
  }

  /** Direct access for tests and invariant checkers: a copy of the stored object, bypassing faults. */
  peek(
    key: string,
  ): { bytes: Uint8Array; metadata: Record<string, string>; etag: string; createdAtMs: number } | undefined {
    const object = this.#objects.get(key);
    if (object === undefined) return undefined;
    const bytes = readRange(object.pieces, 0, object.sizeBytes);
    return { bytes, metadata: object.metadata, etag: object.etag, createdAtMs: object.createdAtMs };
  }

  /** Called for each object a delete request removes, with the clock's time of its creation. */
  onDelete: ((key: string, createdAtMs: number) => void) | null = null;

  /** Removes an object behind the client's back (the simulator's "object missing"), bypassing faults. */
  lose(key: string): boolean {
    return this.#objects.delete(key);
  }

  keys(): string[] {
    return [...this.#objects.keys()].sort();
  }

  /** Flips one bit of a stored object, as silent corruption would. */
  corrupt(key: string, byteIndex: number): void {
    const object = this.#objects.get(key);
    assert(object !== undefined && byteIndex < object.sizeBytes, `Cannot corrupt ${key}: no such byte`);
    let at = byteIndex;
    for (const piece of object.pieces) {
      if (at < piece.length) {
        piece[at]! ^= 0x01;
        return;
      }
      at -= piece.length;
    }
  }

  async put(key: string, body: BodySource, options: PutOptions): Promise<PutResult> {
    checkKey(key);
    const chunks: Uint8Array[] = [];
    let size = 0;
    const crc = new Crc32Stream();
    for await (const piece of body()) {
      size += piece.length;
      if (size > options.sizeBytes) {
        throw new MalformedError(`Cannot put ${key}: the body is longer than ${options.sizeBytes} bytes`);
      }
      crc.update(piece);
      chunks.push(piece.slice());
    }
    return await this.#attempt("put", key, options, () => {
      if (size !== options.sizeBytes) {
        throw new MalformedError(`Cannot put ${key}: the body is ${size} bytes, not ${options.sizeBytes}`);
      }
      const digest = crc.digest();
      if (options.crc32 !== undefined && digest !== options.crc32) {
        throw new CorruptError(`Cannot put ${key}: CRC32 mismatch`, 400);
      }
      if (options.ifAbsent && this.#objects.has(key)) {
        throw new PreconditionFailedError(`Cannot create ${key}: it exists`, 412);
      }
      const etag = digest.toString(16).padStart(8, "0");
      this.#objects.set(key, {
        pieces: chunks,
        sizeBytes: size,
        metadata: { ...options.metadata },
        etag,
        createdAtMs: this.#clock.nowMs(),
        lastModifiedMs: this.#clock.wallMs() + (this.faults.wallSkewMs ?? 0),
      });
      return { etag };
    }, size);
  }

  getRange(
    key: string,
    start: number,
    endExclusive: number,
    options: GetOptions = {},
  ): Promise<Uint8Array[]> {
    checkKey(key);
    return this.#attempt("get", key, options, () => {
      const object = this.#objects.get(key);
      if (object === undefined) throw new NotFoundError(`Cannot find object ${key}`, 404);
      if (options.ifNoneMatch === object.etag) {
        throw new NotModifiedError(`Cannot get ${key}: not modified`, 304);
      }
      return toPieces(readRange(object.pieces, start, Math.min(endExclusive, object.sizeBytes)));
    }, Math.max(0, endExclusive - start));
  }

  /** The range as `getRange` answers it (its faults, latency and lost replies), then piece by piece. */
  async streamRange(
    key: string,
    start: number,
    endExclusive: number,
    onPiece: PieceSink,
    options: OpOptions = {},
  ): Promise<number> {
    let position = 0;
    for (const piece of await this.getRange(key, start, endExclusive, options)) {
      await onPiece(piece, position);
      position += piece.length;
    }
    return position;
  }

  head(key: string, options: OpOptions = {}): Promise<ObjectHead | null> {
    checkKey(key);
    return this.#attempt("head", key, options, () => {
      const object = this.#objects.get(key);
      return object === undefined
        ? null
        : { sizeBytes: object.sizeBytes, metadata: { ...object.metadata }, etag: object.etag };
    });
  }

  list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    return this.#attempt("list", prefix, options, () => {
      const maxKeys = Math.min(options.maxKeys ?? keysPerRequestMax, keysPerRequestMax);
      const keys = this.keys().filter((k) =>
        k.startsWith(prefix) && (options.startAfter === undefined || k > options.startAfter)
      );
      const page = keys.slice(0, maxKeys);
      return {
        objects: page.map((k) => {
          const object = this.#objects.get(k)!;
          return {
            key: k,
            sizeBytes: object.sizeBytes,
            lastModifiedMs: object.lastModifiedMs,
            etag: object.etag,
          };
        }),
        nextStartAfter: keys.length > maxKeys ? page.at(-1)! : null,
      };
    });
  }

  /** Deletes in batches of at most 1000 keys, one attempt each, as S3's DeleteObjects. */
  async delete(keys: readonly string[], options: OpOptions = {}): Promise<DeleteResult[]> {
    const results: DeleteResult[] = [];
    for (let at = 0; at < keys.length; at += keysPerRequestMax) {
      const batch = keys.slice(at, at + keysPerRequestMax);
      results.push(
        ...await this.#attempt("delete", batch[0] ?? "", options, () =>
          batch.map((key) => {
            const object = this.#objects.get(key);
            if (object !== undefined) this.onDelete?.(key, object.createdAtMs);
            this.#objects.delete(key);
            return { key, error: null };
          })),
      );
    }
    return results;
  }

  /** Runs one attempt: latency, an injected fault, or the effect (then maybe a lost reply). */
  async #attempt<T>(
    op: SimOperation,
    key: string,
    options: OpOptions,
    effect: () => T,
    bytes?: number,
  ): Promise<T> {
    const atMs = this.#clock.nowMs();
    const latency = this.faults.latencyMs;
    if (latency !== undefined) await this.#clock.sleep(this.#rng.int(latency.min, latency.max));
    const fault = this.#drawFault(op, atMs, key);
    if (fault !== null) {
      this.#record({ op, key, atMs, outcome: "error", error: fault.name });
      throw fault;
    }
    let result: T;
    try {
      result = effect();
    } catch (error) {
      this.#record({ op, key, atMs, outcome: "error", error: (error as Error).name });
      throw error;
    }
    const rates = this.faults.errorRates?.[op];
    if (rates?.lostReply !== undefined && this.#rng.chance(rates.lostReply)) {
      this.#record({ op, key, atMs, outcome: "lost" });
      // A lost reply hangs until the attempt's timeout or its abort; either way it ends as below.
      await this.#clock.sleep(options.timeoutMs ?? lostReplyHangMsDefault, options.signal).catch(() => {});
      throw new TransportError(`Cannot ${op} ${key}: timed out waiting for the reply`);
    }
    this.#record({ op, key, atMs, outcome: "ok", ...(bytes !== undefined ? { bytes } : {}) });
    return result;
  }

  #drawFault(op: SimOperation, atMs: number, key: string): ObjectStoreError | null {
    if (this.faults.outages?.some((o) => atMs >= o.fromMs && atMs < o.toMs)) {
      return new TransportError(`Cannot ${op} ${key}: the store is unreachable (outage)`);
    }
    const rates = this.faults.errorRates?.[op];
    if (rates === undefined) return null;
    if (rates.throttle !== undefined && this.#rng.chance(rates.throttle)) {
      return new ThrottledError(`Cannot ${op} ${key}: SlowDown`, 503);
    }
    if (rates.transient !== undefined && this.#rng.chance(rates.transient)) {
      return new TransportError(`Cannot ${op} ${key}: InternalError`, 500);
    }
    if (rates.nonTransient !== undefined && this.#rng.chance(rates.nonTransient)) {
      return new MalformedError(`Cannot ${op} ${key}: unexpected 400`, 400);
    }
    if (rates.auth !== undefined && this.#rng.chance(rates.auth)) {
      return new AuthError(`Cannot ${op} ${key}: AccessDenied`, 403);
    }
    return null;
  }

  #record(record: SimRecord): void {
    if (this.#records.length >= recordsMax) this.#records.shift();
    this.#records.push(record);
  }
}

/** Copies bytes [start, end) out of a list of pieces. */
function readRange(pieces: readonly Uint8Array[], start: number, end: number): Uint8Array {
  const out = new Uint8Array(Math.max(0, end - start));
  let at = 0;
  for (const piece of pieces) {
    const from = Math.max(start, at);
    const to = Math.min(end, at + piece.length);
    if (from < to) out.set(piece.subarray(from - at, to - at), from - start);
    at += piece.length;
    if (at >= end) break;
  }
  return out;
}
