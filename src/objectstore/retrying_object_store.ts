import { isBug } from "../runtime/assert.ts";
import type {
  BodySource,
  DeleteResult,
  ListOptions,
  ListPage,
  ObjectHead,
  ObjectStore,
  PieceSink,
  PutOptions,
  PutResult,
} from "./object_store.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Rng } from "../runtime/rng.ts";
import {
  classify,
  ObjectStoreError,
  PreconditionFailedError,
  TransportError,
} from "./object_store_errors.ts";
import type { ObjectStoreMetrics, OpKind } from "./object_store_metrics.ts";
import { decideRetry, type RetryProfiles } from "./retry_policy.ts";

/** Options of an operation with a deadline: when the whole of it, retries included, must end. */
export interface DeadlineOptions {
  /** Absolute time on the injected clock by which the whole operation, retries included, ends. */
  deadlineAtMs?: number;
  signal?: AbortSignal;
}

/** A GET's options under a deadline: `ifNoneMatch` makes it conditional (`NotModifiedError`). */
export type DeadlineGetOptions = DeadlineOptions & { ifNoneMatch?: string };

/** A put's options under a deadline: what the backend takes, less the per-attempt timeout. */
export type DeadlinePutOptions = Omit<PutOptions, "timeoutMs"> & DeadlineOptions;

/** A listing's options under a deadline: what the backend takes, less the per-attempt timeout. */
export type DeadlineListOptions = Omit<ListOptions, "timeoutMs"> & DeadlineOptions;

/**
 * The object store as the layers above `src/objectstore/` use it: the operations of `ObjectStore`,
 * each under an absolute deadline (the caller's, or a default for its kind) instead of a timeout per
 * attempt. An implementation decides how many attempts fit before the deadline and throws the typed
 * errors of `object_store_errors.ts` when none succeeded; `RetryingObjectStore` is the one in use.
 */
export interface DeadlineObjectStore {
  /** Writes an object from a body that can be produced again for each attempt. */
  put(key: string, body: BodySource, options: DeadlinePutOptions): Promise<PutResult>;
  /** Bytes [start, endExclusive) of an object, as pieces of at most 1 MiB. */
  getRange(
    key: string,
    start: number,
    endExclusive: number,
    options?: DeadlineGetOptions,
  ): Promise<Uint8Array[]>;
  /**
   * Bytes [start, endExclusive) of an object handed to `onPiece` as they arrive; a retried attempt
   * streams the range again from position 0. Resolves with the byte count of the attempt that succeeded.
   */
  streamRange(
    key: string,
    start: number,
    endExclusive: number,
    onPiece: PieceSink,
    options?: DeadlineOptions,
  ): Promise<number>;
  /** Size, user metadata and etag, or null when the object does not exist. */
  head(key: string, options?: DeadlineOptions): Promise<ObjectHead | null>;
  /** One page of keys under `prefix`, sorted, after `startAfter`. */
  list(prefix: string, options?: DeadlineListOptions): Promise<ListPage>;
  /** Deletes keys; a missing key counts as deleted. One result per key. */
  delete(keys: readonly string[], options?: DeadlineOptions): Promise<DeleteResult[]>;
}

/** Deadlines per operation kind when the caller gives none, in milliseconds. */
export interface DefaultDeadlines {
  putMs: number;
  getMs: number;
  otherMs: number;
}

/**
 * Retries and deadlines above any backend. Each operation runs under a deadline (the caller's, or
 * the default for its kind: `putMs` for uploads, `getMs` for ranged reads, `otherMs` for the rest); an
 * attempt gets the time left as its timeout, and a retry happens only if it can start before the
 * deadline. The decision is `decideRetry`, a pure function; this shell sleeps on the injected
 * clock and counts everything in the metrics.
 */
export class RetryingObjectStore implements DeadlineObjectStore {
  readonly inner: ObjectStore;
  readonly #clock: Clock;
  readonly #rng: Rng;
  readonly #profiles: RetryProfiles;
  readonly #deadlines: DefaultDeadlines;
  readonly #metrics: ObjectStoreMetrics | null;

  constructor(
    inner: ObjectStore,
    clock: Clock,
    rng: Rng,
    profiles: RetryProfiles,
    deadlines: DefaultDeadlines,
    metrics: ObjectStoreMetrics | null,
  ) {
    this.inner = inner;
    this.#clock = clock;
    this.#rng = rng;
    this.#profiles = profiles;
    this.#deadlines = deadlines;
    this.#metrics = metrics;
  }

  put(
    key: string,
    body: BodySource,
    options: DeadlinePutOptions,
  ): Promise<PutResult> {
    return this.#run(
      "put",
      options.deadlineAtMs ?? this.#in(this.#deadlines.putMs),
      options.signal,
      async (timeoutMs) => {
        const result = await this.inner.put(key, body, { ...options, timeoutMs });
        this.#metrics?.bytesSent.inc({ op: "put" }, options.sizeBytes);
        return result;
      },
    );
  }

  getRange(
    key: string,
    start: number,
    endExclusive: number,
    options: DeadlineGetOptions = {},
  ): Promise<Uint8Array[]> {
    return this.#run(
      "get",
      options.deadlineAtMs ?? this.#in(this.#deadlines.getMs),
      options.signal,
      async (timeoutMs) => {
        const pieces = await this.inner.getRange(key, start, endExclusive, {
          timeoutMs,
          ...signalOf(options),
          ...(options.ifNoneMatch === undefined ? {} : { ifNoneMatch: options.ifNoneMatch }),
        });
        this.#metrics?.bytesReceived.inc({ op: "get" }, pieces.reduce((sum, p) => sum + p.length, 0));
        return pieces;
      },
    );
  }

  /** `streamRange` with retries: a retried attempt streams the range again from position 0. */
  streamRange(
    key: string,
    start: number,
    endExclusive: number,
    onPiece: PieceSink,
    options: DeadlineOptions = {},
  ): Promise<number> {
    return this.#run(
      "get",
      options.deadlineAtMs ?? this.#in(this.#deadlines.getMs),
      options.signal,
      async (timeoutMs) => {
        const bytes = await this.inner.streamRange(key, start, endExclusive, onPiece, {
          timeoutMs,
          ...signalOf(options),
        });
        this.#metrics?.bytesReceived.inc({ op: "get" }, bytes);
        return bytes;
      },
    );
  }

  head(key: string, options: DeadlineOptions = {}): Promise<ObjectHead | null> {
    return this.#run(
      "head",
      options.deadlineAtMs ?? this.#in(this.#deadlines.otherMs),
      options.signal,
      (timeoutMs) => this.inner.head(key, { timeoutMs, ...signalOf(options) }),
    );
  }

  list(prefix: string, options: DeadlineListOptions = {}): Promise<ListPage> {
    return this.#run(
      "list",
      options.deadlineAtMs ?? this.#in(this.#deadlines.otherMs),
      options.signal,
      (timeoutMs) => this.inner.list(prefix, { ...options, timeoutMs }),
    );
  }

  delete(keys: readonly string[], options: DeadlineOptions = {}): Promise<DeleteResult[]> {
    return this.#run(
      "delete",
      options.deadlineAtMs ?? this.#in(this.#deadlines.otherMs),
      options.signal,
      (timeoutMs) => this.inner.delete(keys, { timeoutMs, ...signalOf(options) }),
    );
  }

  #in(ms: number): number {
    return this.#clock.nowMs() + ms;
  }

  async #run<T>(
    op: OpKind,
    deadlineAtMs: number,
    signal: AbortSignal | undefined,
    attempt: (timeoutMs: number) => Promise<T>,
  ) {
    // The last attempt's failure: the cause of a deadline that passes before the next one.
    let lastError: unknown = undefined;
    // Each pass is one attempt; decideRetry refuses once the deadline is near, which bounds the loop.
    for (let n = 1;; n++) {
      const remainingMs = deadlineAtMs - this.#clock.nowMs();
      if (remainingMs <= 0) {
        const cause = lastError === undefined ? undefined : { cause: lastError };
        throw new TransportError(`Cannot ${op}: the deadline passed before attempt ${n}`, null, cause);
      }
      signal?.throwIfAborted();
      const started = this.#clock.nowMs();
      let delayMs = 0;
      this.#metrics?.requests.inc({ op });
      this.#metrics?.inFlight.inc({ op });
      try {
        return await attempt(remainingMs);
      } catch (error) {
        // A bug is no failure of the store: never retried, it goes to the caller as it is.
        if (isBug(error)) throw error;
        lastError = error;
        const errorClass = classify(error);
        this.#metrics?.errors.inc({ op, class: errorClass });
        if (error instanceof ObjectStoreError && error.status !== null && error.status >= 400) {
          this.#metrics?.responses.inc({ op, status: String(error.status) });
        }
        const decision = decideRetry(
          errorClass,
          error instanceof PreconditionFailedError,
          n,
          this.#clock.nowMs(),
          deadlineAtMs,
          this.#profiles,
          this.#rng.nextFloat(),
        );
        if (!decision.retry) throw error;
        this.#metrics?.retries.inc({ op, profile: errorClass === "retry" ? "transient" : "non_transient" });
        delayMs = decision.delayMs;
      } finally {
        this.#metrics?.inFlight.dec({ op });
        this.#metrics?.latency.observe({ op }, (this.#clock.nowMs() - started) / 1000);
      }
      if (delayMs > 0) await this.#clock.sleep(delayMs, signal);
    }
  }
}

function signalOf(options: DeadlineOptions): { signal?: AbortSignal } {
  return options.signal === undefined ? {} : { signal: options.signal };
}
