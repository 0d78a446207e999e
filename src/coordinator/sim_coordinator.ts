import { assert } from "../runtime/assert.ts";
import type { Cancel, Clock } from "../runtime/clock/clock.ts";
import {
  type Coordinator,
  inRange,
  type KeyRange,
  type LeaseId,
  noLease,
  type RangeResult,
  type Txn,
  txnOpsMax,
  type TxnResult,
  type Watch,
  type WatchEvent,
  type WatchListener,
} from "./coordinator.ts";
import {
  CompactedError,
  CoordinatorRequestError,
  CoordinatorUnavailableError,
  LeaseNotFoundError,
} from "./coordinator_errors.ts";
import { applyTxn, type StoreState } from "./sim_txn.ts";

export interface SimCoordinatorOptions {
  clock: Clock;
  /** Shortest lease; shorter requests are raised to it (etcd: 1.5 × its election timeout). */
  leaseTtlMinMs?: number;
  /** Events kept for watches that start in the past; older ones are compacted away. */
  historyEventsMax?: number;
  /** How long after a write its watchers hear of it. */
  watchLagMs?: number;
}

interface SimLease {
  id: LeaseId;
  ttlMs: number;
  expiresAtMs: number;
  cancelExpiry: Cancel;
}

interface SimWatch {
  client: SimClient;
  range: KeyRange;
  /** The next revision to deliver. */
  nextRevision: number;
  listener: WatchListener;
  open: boolean;
}

/**
 * A linearizable store in memory, in the model etcd serves, on the injected clock: leases expire
 * when the clock passes their deadline, watches hear of writes `watchLagMs` later, and each
 * client (`client(name)`) can be cut off from the store and healed, as a node partitioned from
 * etcd would be. Deterministic: the same calls at the same virtual times give the same results.
 */
export class SimCoordinatorStore {
  readonly #clock: Clock;
  readonly #leaseTtlMinMs: number;
  readonly #historyEventsMax: number;
  readonly #watchLagMs: number;
  readonly #state: StoreState = { kvs: new Map(), revision: 1 };
  readonly #leases = new Map<LeaseId, SimLease>();
  readonly #history: WatchEvent[] = [];
  #compactedRevision = 0;
  #nextLeaseId = 1;
  readonly #watches = new Set<SimWatch>();
  readonly #clients = new Map<string, SimClient>();

  constructor(options: SimCoordinatorOptions) {
    this.#clock = options.clock;
    this.#leaseTtlMinMs = options.leaseTtlMinMs ?? 1000;
    this.#historyEventsMax = options.historyEventsMax ?? 10_000;
    this.#watchLagMs = options.watchLagMs ?? 0;
    assert(this.#historyEventsMax >= 1, "Cannot make a simulated coordinator: no history");
  }

  get revision(): number {
    return this.#state.revision;
  }

  /** The coordinator one node uses; the same name gives the same client. */
  client(name: string): Coordinator & { readonly name: string } {
    let client = this.#clients.get(name);
    if (client === undefined) {
      client = new SimClient(this, name);
      this.#clients.set(name, client);
    }
    return client;
  }

  /** Cuts the client off (every request fails, its watches hear nothing) or heals it. */
  setReachable(name: string, reachable: boolean): void {
    const client = this.#clients.get(name);
    assert(client !== undefined, `Cannot cut off ${name}: no such client`);
    client.reachable = reachable;
    if (reachable) this.#scheduleDeliveries();
  }

  txn(txn: Txn): TxnResult {
    const ops = txn.success.length + (txn.failure?.length ?? 0);
    if (ops > txnOpsMax) {
      throw new CoordinatorRequestError(
        `Cannot run a transaction of ${ops} operations: at most ${txnOpsMax}`,
      );
    }
    for (const op of [...txn.success, ...(txn.failure ?? [])]) {
      if (
        op.kind === "put" && op.lease !== undefined && op.lease !== noLease && !this.#leases.has(op.lease)
      ) {
        throw new LeaseNotFoundError(op.lease);
      }
    }
    const applied = applyTxn(this.#state, txn);
    this.#record(applied.events);
    return applied.result;
  }

  range(range: KeyRange): RangeResult {
    const kvs = [...this.#state.kvs.values()].filter((kv) => inRange(range, kv.key))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { kvs: kvs.map((kv) => ({ ...kv })), revision: this.#state.revision };
  }

  leaseGrant(ttlMs: number): { id: LeaseId; ttlMs: number } {
    const granted = Math.ceil(Math.max(this.#leaseTtlMinMs, ttlMs) / 1000) * 1000;
    const id = String(this.#nextLeaseId++);
    const lease: SimLease = { id, ttlMs: granted, expiresAtMs: 0, cancelExpiry: () => {} };
    this.#leases.set(id, lease);
    this.#renew(lease);
    return { id, ttlMs: granted };
  }

  leaseKeepAlive(id: LeaseId): { ttlMs: number } {
    const lease = this.#leases.get(id);
    if (lease === undefined) throw new LeaseNotFoundError(id);
    this.#renew(lease);
    return { ttlMs: lease.ttlMs };
  }

  leaseRevoke(id: LeaseId): void {
    const lease = this.#leases.get(id);
    if (lease === undefined) return;
    lease.cancelExpiry();
    this.#expire(lease);
  }

  /** The live leases' ids, for checks. */
  leaseIds(): LeaseId[] {
    return [...this.#leases.keys()];
  }

  openWatch(client: SimClient, range: KeyRange, fromRevision: number, listener: WatchListener): Watch {
    const start = fromRevision <= 0 ? this.#state.revision + 1 : fromRevision;
    const watch: SimWatch = { client, range, nextRevision: start, listener, open: true };
    if (start <= this.#compactedRevision) {
      this.#clock.schedule(0, () => listener.ended(new CompactedError(start, this.#compactedRevision)));
      return { close: () => {} };
    }
    this.#watches.add(watch);
    this.#scheduleDeliveries();
    return {
      close: () => {
        if (!watch.open) return;
        watch.open = false;
        this.#watches.delete(watch);
        this.#clock.schedule(0, () => listener.ended(null));
      },
    };
  }

  /** Ends the client's watches, as its process ending would. */
  closeClient(client: SimClient): void {
    for (const watch of [...this.#watches]) {
      if (watch.client !== client) continue;
      watch.open = false;
      this.#watches.delete(watch);
      watch.listener.ended(null);
    }
  }

  #renew(lease: SimLease): void {
    lease.cancelExpiry();
    lease.expiresAtMs = this.#clock.nowMs() + lease.ttlMs;
    lease.cancelExpiry = this.#clock.schedule(lease.ttlMs, () => this.#expire(lease));
  }

  #expire(lease: SimLease): void {
    if (!this.#leases.delete(lease.id)) return;
    const bound = [...this.#state.kvs.values()].filter((kv) => kv.lease === lease.id);
    if (bound.length === 0) return;
    const applied = applyTxn(this.#state, {
      compare: [],
      success: bound.map((kv) => ({ kind: "delete" as const, key: kv.key })),
    });
    this.#record(applied.events);
  }

  #record(events: WatchEvent[]): void {
    if (events.length === 0) return;
    this.#history.push(...events);
    while (this.#history.length > this.#historyEventsMax) {
      this.#compactedRevision = this.#history.shift()!.kv.modRevision;
    }
    this.#scheduleDeliveries();
  }

  #scheduleDeliveries(): void {
    this.#clock.schedule(this.#watchLagMs, () => this.#deliver());
  }

  /** Hands each reachable open watch the events it has not heard yet. */
  #deliver(): void {
    for (const watch of [...this.#watches]) {
      if (!watch.open || !watch.client.reachable) continue;
      if (watch.nextRevision <= this.#compactedRevision) {
        watch.open = false;
        this.#watches.delete(watch);
        watch.listener.ended(new CompactedError(watch.nextRevision, this.#compactedRevision));
        continue;
      }
      const due = this.#history.filter((e) =>
        e.kv.modRevision >= watch.nextRevision && e.kv.modRevision <= this.#state.revision &&
        inRange(watch.range, e.kv.key)
      );
      watch.nextRevision = this.#state.revision + 1;
      if (due.length > 0) watch.listener.events(due.map((e) => ({ kind: e.kind, kv: { ...e.kv } })));
    }
  }
}

/** One node's view of the simulated store; every call fails while the node is cut off. */
class SimClient implements Coordinator {
  readonly name: string;
  reachable = true;
  readonly #store: SimCoordinatorStore;

  constructor(store: SimCoordinatorStore, name: string) {
    this.#store = store;
    this.name = name;
  }

  txn(txn: Txn): Promise<TxnResult> {
    return this.#call("run a transaction", () => this.#store.txn(txn));
  }

  range(range: KeyRange): Promise<RangeResult> {
    return this.#call("read a range", () => this.#store.range(range));
  }

  leaseGrant(ttlMs: number): Promise<{ id: LeaseId; ttlMs: number }> {
    return this.#call("grant a lease", () => this.#store.leaseGrant(ttlMs));
  }

  leaseKeepAlive(id: LeaseId): Promise<{ ttlMs: number }> {
    return this.#call("keep a lease alive", () => this.#store.leaseKeepAlive(id));
  }

  leaseRevoke(id: LeaseId): Promise<void> {
    return this.#call("revoke a lease", () => this.#store.leaseRevoke(id));
  }

  watch(range: KeyRange, fromRevision: number, listener: WatchListener): Watch {
    return this.#store.openWatch(this, range, fromRevision, listener);
  }

  close(): Promise<void> {
    this.#store.closeClient(this);
    return Promise.resolve();
  }

  #call<T>(what: string, run: () => T): Promise<T> {
    if (!this.reachable) {
      return Promise.reject(
        new CoordinatorUnavailableError(
          `Cannot ${what}: ${this.name} is cut off from the coordinator`,
          false,
        ),
      );
    }
    try {
      return Promise.resolve(run());
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
