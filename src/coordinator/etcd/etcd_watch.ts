import { assert, isBug } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { KeyRange, Watch, WatchListener } from "../coordinator.ts";
import { CompactedError, CoordinatorUnavailableError } from "../coordinator_errors.ts";
import { numberOf, rangeJson, watchEventsOf } from "./etcd_codec.ts";
import { JsonLines } from "./json_lines.ts";

/** Streams opened in a row without one being created, before the watch gives up. */
export const watchReconnectsMax = 20;
/** First and longest pause between two attempts to open a watch stream. */
export const watchRetryInitialMs = 50;
export const watchRetryMaxMs = 2000;

type Json = Record<string, unknown>;

export interface EtcdWatchOptions {
  range: KeyRange;
  fromRevision: number;
  listener: WatchListener;
  clock: Clock;
  lineBytesMax: number;
  /** Posts a watch request to the current member; the answer streams until `signal` aborts. */
  open(body: Json, signal: AbortSignal): Promise<Response>;
  /** Moves to the next member, after a stream that could not be opened or ended. */
  moveOn(): void;
  /** Called once, when the watch has ended. */
  done(): void;
}

/**
 * One watch over the gateway's streamed `/v3/watch`. When a stream ends (its member died, the
 * connection broke) it opens another on the next member from the revision after the last event
 * it delivered, so no event is lost or repeated; it gives up after `watchReconnectsMax` attempts
 * in a row that opened nothing, and ends with `CompactedError` when the history it needs is gone.
 */
export class EtcdWatch implements Watch {
  readonly #options: EtcdWatchOptions;
  readonly #controller = new AbortController();
  #nextRevision: number;
  #failures = 0;
  #ended = false;

  constructor(options: EtcdWatchOptions) {
    this.#options = options;
    this.#nextRevision = options.fromRevision;
  }

  start(): void {
    this.#run().then(
      (error) => this.#end(error),
      (error) => {
        // A bug (a listener's included) is not the watch's failure to report and retry: it goes
        // on up, unhandled, and the process stops.
        if (isBug(error)) throw error;
        this.#end(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  close(): void {
    this.#controller.abort(new Error("the watch was closed"));
  }

  #end(error: Error | null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#options.done();
    this.#options.listener.ended(this.#controller.signal.aborted ? null : error);
  }

  /** Streams until closed or given up; resolves with why it stopped (null: closed). */
  async #run(): Promise<Error | null> {
    const signal = this.#controller.signal;
    let lastReason = "";
    while (!signal.aborted) {
      if (this.#failures >= watchReconnectsMax) {
        return new CoordinatorUnavailableError(
          `Cannot watch ${this.#options.range.key}: ${this.#failures} streams in a row failed (${lastReason})`,
          false,
        );
      }
      try {
        const stop = await this.#stream(signal);
        if (stop !== null) return stop;
        lastReason = "the stream ended";
      } catch (error) {
        // A bug is no broken stream: it ends the watch as the watch's failure, never reconnected.
        if (isBug(error)) throw error;
        if (signal.aborted) return null;
        lastReason = error instanceof Error ? error.message : String(error);
      }
      this.#failures++;
      this.#options.moveOn();
      const pauseMs = Math.min(watchRetryMaxMs, watchRetryInitialMs * 2 ** Math.min(this.#failures, 10));
      // Only a close aborts the pause (AbortedError), and the loop then ends on `signal.aborted`.
      await this.#options.clock.sleep(pauseMs, signal).catch(() => {});
    }
    return null;
  }

  /** One stream: delivers its events; resolves with an error that ends the watch, or null to reconnect. */
  async #stream(signal: AbortSignal): Promise<Error | null> {
    const request: Json = { ...rangeJson(this.#options.range) };
    if (this.#nextRevision > 0) request.start_revision = String(this.#nextRevision);
    const response = await this.#options.open({ create_request: request }, signal).catch(streamFailed);
    assert(response.body !== null, "Cannot watch etcd: the answer has no body");
    const lines = new JsonLines(this.#options.lineBytesMax);
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read().catch(streamFailed);
        const documents = done ? lines.end() : lines.push(value);
        for (const document of documents) {
          const stop = this.#take(document as Json);
          if (stop !== null) return stop;
        }
        if (done) return null;
      }
    } finally {
      reader.releaseLock();
      // Cancelling a stream that already failed or ended fails too; the stream's end was handled.
      response.body.cancel().catch(() => {});
    }
  }

  /** Takes one streamed answer; an error that ends the watch, or null. */
  #take(document: Json): Error | null {
    if (document.error !== undefined) {
      throw new Error(String((document.error as Json).message ?? document.error));
    }
    const result = (document.result ?? {}) as Json;
    const compactRevision = numberOf(result.compact_revision);
    if (compactRevision > 0) return new CompactedError(this.#nextRevision, compactRevision);
    if (result.canceled === true) {
      throw new Error(`etcd canceled the watch: ${String(result.cancel_reason ?? "")}`);
    }
    if (result.created === true) {
      this.#failures = 0;
      // From now on when no start was asked: later reconnections start after the created revision.
      if (this.#nextRevision <= 0) this.#nextRevision = numberOf((result.header as Json).revision) + 1;
    }
    const events = watchEventsOf(result).filter((e) => e.kv.modRevision >= this.#nextRevision);
    if (events.length === 0) return null;
    this.#nextRevision = events[events.length - 1]!.kv.modRevision + 1;
    this.#options.listener.events(events);
    return null;
  }
}

/** The watch's stream broke (refused, reset, cut: what fetch reports as a TypeError): reconnected. */
export class EtcdStreamError extends Error {
  override name = "EtcdStreamError";
}

function streamFailed(error: unknown): never {
  throw new EtcdStreamError(`Cannot read the watch's stream: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
  });
}
