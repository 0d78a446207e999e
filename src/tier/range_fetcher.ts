import type { DeadlineObjectStore } from "../objectstore/deadline_object_store.ts";
import type { PieceSink } from "../objectstore/object_store.ts";
import { concatBytes } from "../runtime/bytes.ts";
import type { Clock } from "../runtime/clock.ts";
import { type Cooperation, cooperative } from "../runtime/cooperation.ts";
import type { Semaphore } from "../runtime/semaphore.ts";
import type { TokenBucket } from "../runtime/token_bucket.ts";
import type { CacheMetrics } from "./cache_metrics.ts";
import type { ChunkSpan } from "./chunk_layout.ts";

export interface RangeFetcherDeps {
  store: Pick<DeadlineObjectStore, "getRange" | "streamRange">;
  clock: Clock;
  /** Deadline of one fetch, retries included: it outlives the poll that started it. */
  fetchDeadlineMs: number;
  /** `fetch_concurrency`: fetches for polls hold their own permits, never the uploads'. */
  fetchSlots: Semaphore;
  /** `fetch_bandwidth`, this shard's share. */
  fetchBandwidth: TokenBucket;
  metrics?: CacheMetrics;
  /** The benchmark's switch: in its naive phase fetches skip the slots and take a chunk whole. */
  cooperation?: Cooperation;
}

/** A fetch let in: it holds a `fetch_concurrency` permit (none when naive) until disposed. */
export interface FetchAdmission extends Disposable {
  /** The benchmark's naive phase: no permit, and a chunk is fetched whole rather than streamed. */
  readonly naive: boolean;
}

/** Which GET a duration is recorded for. */
type RangeKind = "first" | "index";

/**
 * Ranged GETs for a shard's reads of remote data: each admitted under a `fetch_concurrency`
 * permit and `fetch_bandwidth` tokens (uploads have their own), run under the fetch deadline, and
 * counted. A cold poll's first range and a segment's `.index` come whole into memory; a chunk is
 * streamed piece by piece to a writer.
 */
export class RangeFetcher {
  readonly #deps: RangeFetcherDeps;

  constructor(deps: RangeFetcherDeps) {
    this.#deps = deps;
  }

  /** Waits for a permit, then for the tokens of `bytes`. */
  async admit(bytes: number): Promise<FetchAdmission> {
    const naive = (this.#deps.cooperation ?? cooperative).naive;
    const permit = naive ? null : await this.#deps.fetchSlots.acquire();
    try {
      await this.#deps.fetchBandwidth.take(bytes);
    } catch (error) {
      permit?.[Symbol.dispose]();
      throw error;
    }
    return { naive, [Symbol.dispose]: () => permit?.[Symbol.dispose]() };
  }

  /** `[start, end)` of an object, whole: a cold poll's first range, or a segment's `.index`. */
  async fetchRange(objectKey: string, start: number, end: number, kind: RangeKind): Promise<Uint8Array> {
    using _admission = await this.admit(end - start);
    const metrics = this.#deps.metrics;
    metrics?.misses.inc();
    const startedMs = this.#deps.clock.nowMs();
    const pieces = await this.#deps.store.getRange(objectKey, start, end, {
      deadlineAtMs: startedMs + this.#deps.fetchDeadlineMs,
    });
    metrics?.fetchSeconds.observe({ kind }, (this.#deps.clock.nowMs() - startedMs) / 1000);
    const length = pieces.reduce((n, p) => n + p.length, 0);
    metrics?.fetchedBytes.inc(length);
    return concatBytes(pieces, length);
  }

  /**
   * A chunk's bytes, handed to `write` at their positions: piece by piece as they arrive, or
   * (`admission.naive`) whole. Returns how many. The caller holds the admission.
   */
  async streamChunk(
    objectKey: string,
    span: ChunkSpan,
    admission: FetchAdmission,
    write: PieceSink,
  ): Promise<number> {
    const startedMs = this.#deps.clock.nowMs();
    const deadline = { deadlineAtMs: startedMs + this.#deps.fetchDeadlineMs };
    let sizeBytes: number;
    if (admission.naive) {
      const pieces = await this.#deps.store.getRange(objectKey, span.start, span.end, deadline);
      const whole = concatBytes(pieces, pieces.reduce((n, p) => n + p.length, 0));
      await write(whole, 0);
      sizeBytes = whole.length;
    } else {
      sizeBytes = await this.#deps.store.streamRange(objectKey, span.start, span.end, write, deadline);
    }
    this.#deps.metrics?.fetchSeconds.observe(
      { kind: "chunk" },
      (this.#deps.clock.nowMs() - startedMs) / 1000,
    );
    return sizeBytes;
  }
}
