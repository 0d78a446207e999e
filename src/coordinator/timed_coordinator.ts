import type { Clock } from "../runtime/clock/clock.ts";
import type {
  Coordinator,
  KeyRange,
  LeaseId,
  RangeResult,
  Txn,
  TxnResult,
  Watch,
  WatchListener,
} from "./coordinator.ts";

/** The requests a timed coordinator reports, by the name its observer hears. */
export type CoordinatorOp = "txn" | "range" | "lease_grant" | "lease_keepalive" | "lease_revoke";

/** A `Coordinator` that reports how long each request took (failed ones too) to `observe`, in seconds. */
export class TimedCoordinator implements Coordinator {
  readonly #inner: Coordinator;
  readonly #clock: Clock;
  readonly #observe: (op: CoordinatorOp, seconds: number) => void;

  constructor(inner: Coordinator, clock: Clock, observe: (op: CoordinatorOp, seconds: number) => void) {
    this.#inner = inner;
    this.#clock = clock;
    this.#observe = observe;
  }

  txn(txn: Txn): Promise<TxnResult> {
    return this.#timed("txn", () => this.#inner.txn(txn));
  }

  range(range: KeyRange): Promise<RangeResult> {
    return this.#timed("range", () => this.#inner.range(range));
  }

  leaseGrant(ttlMs: number): Promise<{ id: LeaseId; ttlMs: number }> {
    return this.#timed("lease_grant", () => this.#inner.leaseGrant(ttlMs));
  }

  leaseKeepAlive(id: LeaseId): Promise<{ ttlMs: number }> {
    return this.#timed("lease_keepalive", () => this.#inner.leaseKeepAlive(id));
  }

  leaseRevoke(id: LeaseId): Promise<void> {
    return this.#timed("lease_revoke", () => this.#inner.leaseRevoke(id));
  }

  watch(range: KeyRange, fromRevision: number, listener: WatchListener): Watch {
    return this.#inner.watch(range, fromRevision, listener);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  async #timed<T>(op: CoordinatorOp, call: () => Promise<T>): Promise<T> {
    const startedMs = this.#clock.nowMs();
    try {
      return await call();
    } finally {
      this.#observe(op, (this.#clock.nowMs() - startedMs) / 1000);
    }
  }
}
