import { assert } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import {
  type Coordinator,
  type KeyRange,
  type LeaseId,
  type RangeResult,
  type Txn,
  txnOpsMax,
  type TxnResult,
  type Watch,
  type WatchListener,
} from "../coordinator.ts";
import {
  CoordinatorRequestError,
  CoordinatorUnavailableError,
  LeaseNotFoundError,
} from "../coordinator_errors.ts";
import { kvsOf, numberOf, rangeJson, revisionOf, txnJson, txnResultOf } from "./etcd_codec.ts";
import { EtcdWatch } from "./etcd_watch.ts";
import { type HttpFetch, postInit, postJson, type PostOutcome } from "./http_post.ts";

export interface EtcdCoordinatorOptions {
  /** Client URLs of the members, such as `http://127.0.0.1:2379`. */
  endpoints: readonly string[];
  fetch: HttpFetch;
  clock: Clock;
  /** Deadline of one request to one member. */
  requestTimeoutMs: number;
}

type Json = Record<string, unknown>;

/** gRPC status codes the gateway answers with. */
const grpcInvalidArgument = 3;
const grpcNotFound = 5;
const grpcFailedPrecondition = 9;
const grpcOutOfRange = 11;

/** Responses of one watch stream line, longest accepted (etcd's requests are at most 1.5 MiB). */
export const watchLineBytesMax = 16 * 1024 * 1024;

/**
 * `Coordinator` over etcd's v3 JSON gateway (`/v3/kv/txn`, `/v3/kv/range`, `/v3/lease/*`,
 * `/v3/watch`). Requests go to one member at a time and move to the next when it cannot be
 * reached. A read (or a lease call, whose repetition changes nothing) is retried on the next
 * member; a transaction is retried only when it surely never reached a member, and otherwise fails
 * as ambiguous (`CoordinatorUnavailableError.ambiguous`): the caller re-reads, and its compares
 * make a retry safe.
 */
export class EtcdCoordinator implements Coordinator {
  readonly #options: EtcdCoordinatorOptions;
  readonly #watches = new Set<EtcdWatch>();
  #current = 0;
  #closed = false;

  constructor(options: EtcdCoordinatorOptions) {
    assert(options.endpoints.length >= 1, "Cannot reach etcd: no endpoints");
    assert(options.requestTimeoutMs > 0, "Cannot reach etcd: no request timeout");
    this.#options = options;
  }

  async txn(txn: Txn): Promise<TxnResult> {
    const ops = txn.success.length + (txn.failure?.length ?? 0);
    if (ops > txnOpsMax) {
      throw new CoordinatorRequestError(
        `Cannot run a transaction of ${ops} operations: at most ${txnOpsMax}`,
      );
    }
    const json = await this.#request("run a transaction", "/v3/kv/txn", txnJson(txn), false);
    return txnResultOf(json, txn);
  }

  async range(range: KeyRange): Promise<RangeResult> {
    const json = await this.#request("read a range", "/v3/kv/range", rangeJson(range), true);
    return { kvs: kvsOf(json), revision: revisionOf(json) };
  }

  async leaseGrant(ttlMs: number): Promise<{ id: LeaseId; ttlMs: number }> {
    const ttlSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
    // Granting twice leaves an unused lease that expires by itself: safe to retry.
    const json = await this.#request("grant a lease", "/v3/lease/grant", { TTL: String(ttlSeconds) }, true);
    if (typeof json.ID !== "string" || json.ID === "0") {
      throw new CoordinatorUnavailableError(
        `Cannot grant a lease: etcd answered ${String(json.error)}`,
        false,
      );
    }
    return { id: json.ID, ttlMs: numberOf(json.TTL) * 1000 };
  }

  async leaseKeepAlive(id: LeaseId): Promise<{ ttlMs: number }> {
    const json = await this.#leaseRequest("keep a lease alive", "/v3/lease/keepalive", id);
    const ttlSeconds = numberOf((json.result as Json | undefined)?.TTL);
    if (ttlSeconds <= 0) throw new LeaseNotFoundError(id);
    return { ttlMs: ttlSeconds * 1000 };
  }

  async leaseRevoke(id: LeaseId): Promise<void> {
    try {
      await this.#leaseRequest("revoke a lease", "/v3/lease/revoke", id);
    } catch (error) {
      if (!(error instanceof LeaseNotFoundError)) throw error;
    }
  }

  async #leaseRequest(what: string, path: string, id: LeaseId): Promise<Json> {
    try {
      return await this.#request(what, path, { ID: id }, true);
    } catch (error) {
      if (error instanceof LeaseNotFoundError) throw new LeaseNotFoundError(id);
      throw error;
    }
  }

  watch(range: KeyRange, fromRevision: number, listener: WatchListener): Watch {
    assert(!this.#closed, "Cannot watch etcd: the coordinator is closed");
    const watch = new EtcdWatch({
      range,
      fromRevision,
      listener,
      clock: this.#options.clock,
      lineBytesMax: watchLineBytesMax,
      open: (body, signal) => this.#options.fetch(`${this.#endpoint()}/v3/watch`, postInit(body, signal)),
      moveOn: () => this.#moveOn(),
      done: () => this.#watches.delete(watch),
    });
    this.#watches.add(watch);
    watch.start();
    return watch;
  }

  close(): Promise<void> {
    this.#closed = true;
    for (const watch of [...this.#watches]) watch.close();
    return Promise.resolve();
  }

  #endpoint(): string {
    return this.#options.endpoints[this.#current % this.#options.endpoints.length]!.replace(/\/+$/, "");
  }

  #moveOn(): void {
    this.#current = (this.#current + 1) % this.#options.endpoints.length;
  }

  /**
   * Posts `body` to the current member, moving to the next while the request may be repeated:
   * always when `repeatable`, else only when it never reached a member.
   */
  async #request(what: string, path: string, body: Json, repeatable: boolean): Promise<Json> {
    assert(!this.#closed, `Cannot ${what}: the coordinator is closed`);
    const { endpoints, fetch, clock, requestTimeoutMs } = this.#options;
    const reasons: string[] = [];
    for (let attempt = 0; attempt < endpoints.length; attempt++) {
      const endpoint = this.#endpoint();
      const outcome = await postJson(fetch, clock, `${endpoint}${path}`, body, requestTimeoutMs);
      const answer = answerOf(what, outcome);
      if (answer.kind === "done") return answer.json;
      if (answer.kind === "refused") throw answer.error;
      reasons.push(`${endpoint}: ${answer.reason}`);
      this.#moveOn();
      if (answer.reachedMember && !repeatable) {
        throw new CoordinatorUnavailableError(`Cannot ${what}: ${answer.reason}; it may have applied`, true, {
          cause: answer.cause,
        });
      }
    }
    throw new CoordinatorUnavailableError(
      `Cannot ${what}: no etcd member answered (${reasons.join("; ")})`,
      false,
    );
  }
}

type Answer =
  | { kind: "done"; json: Json }
  | { kind: "refused"; error: Error }
  | { kind: "unavailable"; reason: string; reachedMember: boolean; cause?: unknown };

/** What one member's outcome means: an answer, a refusal no retry helps, or a member to move on from. */
function answerOf(what: string, outcome: PostOutcome): Answer {
  if (outcome.kind === "unreached") {
    return { kind: "unavailable", reason: outcome.reason, reachedMember: false };
  }
  if (outcome.kind === "lost") {
    return { kind: "unavailable", reason: outcome.reason, reachedMember: true, cause: outcome.cause };
  }
  const { status, json } = outcome;
  if (status >= 200 && status < 300 && json.error === undefined) return { kind: "done", json };
  const code = numberOf(json.code);
  const message = typeof json.message === "string" ? json.message : `HTTP ${status}`;
  if (code === grpcNotFound && /lease not found/.test(message)) {
    return { kind: "refused", error: new LeaseNotFoundError("") };
  }
  if (code === grpcInvalidArgument || code === grpcFailedPrecondition || code === grpcOutOfRange) {
    return {
      kind: "refused",
      error: new CoordinatorRequestError(`Cannot ${what}: etcd refused it: ${message}`),
    };
  }
  // Timeouts, a lost leader, a stopping member: the request may have been proposed.
  return { kind: "unavailable", reason: message, reachedMember: true };
}
