import type { Coordinator, LeaseId } from "../../coordinator/coordinator.ts";
import { LeaseNotFoundError } from "../../coordinator/coordinator_errors.ts";
import { assert, rethrowBug } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ClusterKeys } from "./cluster_keys.ts";
import {
  initialLeaseKeeper,
  leaseHeld,
  type LeaseKeeperEvent,
  type LeaseKeeperState,
  leaseKeeperStep,
  sinceConfirmedMs,
} from "./lease_keeper.ts";

/** What a node registers under its lease: where other nodes and clients reach it. */
export interface NodeRecord {
  nodeId: number;
  /** "host:port" of its Kafka listener. */
  kafka: string;
  /** "host:port" of its HTTP API. */
  http: string;
}

export interface NodeSessionDeps {
  coordinator: Coordinator;
  keys: ClusterKeys;
  clock: Clock;
  logger: Logger;
  record: NodeRecord;
  leaseTtlMs: number;
}

/** Pause between two looks at a node key still held by an earlier process of the same id. */
const registerRetryMs = 200;

/**
 * This node's membership: an etcd lease kept alive from the tick, and its `NodeRecord` at
 * `nodes/{id}` bound to it. Registration waits (up to two lease lifetimes) for a key left by an
 * earlier process of the same id to expire, and refuses when it does not: two live processes
 * never share an id. When etcd says the lease is gone, a new one is granted and the node
 * registers again; `onRenewed` listeners hear of it (a controller campaigns again).
 */
export class NodeSession {
  readonly record: NodeRecord;
  readonly #deps: NodeSessionDeps;
  #leaseId: LeaseId = "0";
  #registeredRevision = 0;
  #keeper: LeaseKeeperState;
  #renewing = false;
  #closed = false;
  readonly #renewedListeners: Array<(leaseId: LeaseId) => void> = [];

  private constructor(deps: NodeSessionDeps) {
    this.#deps = deps;
    this.record = deps.record;
    this.#keeper = initialLeaseKeeper(deps.leaseTtlMs, deps.clock.nowMs());
  }

  static async open(deps: NodeSessionDeps): Promise<NodeSession> {
    const session = new NodeSession(deps);
    await session.#register();
    return session;
  }

  /** The revision at which this process last registered the node (its key's create revision). */
  get registeredRevision(): number {
    return this.#registeredRevision;
  }

  get leaseId(): LeaseId {
    return this.#leaseId;
  }

  /** Whether this node may act on its lease now: it has not expired by this node's own clock. */
  leaseHeld(): boolean {
    return !this.#renewing && leaseHeld(this.#keeper, this.#deps.clock.nowMs());
  }

  /** Milliseconds since the send time of the last keepalive etcd answered. */
  sinceKeepAliveMs(): number {
    return sinceConfirmedMs(this.#keeper, this.#deps.clock.nowMs());
  }

  onRenewed(listener: (leaseId: LeaseId) => void): void {
    this.#renewedListeners.push(listener);
  }

  /** The tick's duty: sends a keepalive when one is due. Quick: the request runs on its own. */
  tick(nowMs: number): void {
    if (this.#closed || this.#renewing) return;
    this.#step({ kind: "tick" }, nowMs);
  }

  /** Revokes the lease, which deletes this node's keys at once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#deps.coordinator.leaseRevoke(this.#leaseId).catch((error) => {
      this.#deps.logger.warn("Cannot revoke the node's lease; it expires by itself", {
        error,
      });
    });
  }

  #step(event: LeaseKeeperEvent, nowMs: number): void {
    const step = leaseKeeperStep(this.#keeper, event, nowMs);
    this.#keeper = step.state;
    for (const effect of step.effects) {
      if (effect.kind === "sendKeepAlive") this.#sendKeepAlive(nowMs);
      else this.#renew();
    }
  }

  #sendKeepAlive(sentAtMs: number): void {
    const leaseId = this.#leaseId;
    this.#deps.coordinator.leaseKeepAlive(leaseId).then(
      () => this.#leaseId === leaseId && this.#step({ kind: "answered", sentAtMs }, this.#deps.clock.nowMs()),
      (error) => {
        rethrowBug(error, this.#deps.logger, "keeping the node's lease alive threw; the process stops");
        if (this.#leaseId !== leaseId) return;
        const leaseGone = error instanceof LeaseNotFoundError;
        if (leaseGone) {
          this.#deps.logger.warn("the node's lease expired; registering again", { lease: leaseId });
        }
        this.#step({ kind: "failed", leaseGone }, this.#deps.clock.nowMs());
      },
    );
  }

  #renew(): void {
    if (this.#renewing || this.#closed) return;
    this.#renewing = true;
    this.#register().then(
      () => {
        this.#renewing = false;
        for (const listener of this.#renewedListeners) listener(this.#leaseId);
      },
      (error) => {
        // Tried again from the next tick's failed keepalive: the old lease is gone for good.
        this.#renewing = false;
        rethrowBug(error, this.#deps.logger, "registering the node threw; the process stops");
        this.#deps.logger.error("Cannot register the node again", { error });
        this.#keeper = { ...this.#keeper, lost: true };
        this.#deps.clock.schedule(registerRetryMs, () => this.#renew());
      },
    );
  }

  /** Grants a lease and writes the record under it once the key is free (or already ours). */
  async #register(): Promise<void> {
    const { coordinator, keys, clock, leaseTtlMs, record } = this.#deps;
    const sentAtMs = clock.nowMs();
    const lease = await coordinator.leaseGrant(leaseTtlMs);
    assert(
      lease.ttlMs >= leaseTtlMs,
      `Cannot keep a lease of ${leaseTtlMs} ms: etcd granted ${lease.ttlMs} ms`,
    );
    const key = keys.node(record.nodeId);
    const deadlineMs = clock.nowMs() + 2 * lease.ttlMs + 1000;
    for (;;) {
      const written = await coordinator.txn({
        compare: [{ key, target: "createRevision", result: "equal", value: 0 }],
        success: [{ kind: "put", key, value: JSON.stringify(record), lease: lease.id }],
        failure: [{ kind: "range", key }],
      });
      if (written.succeeded) {
        this.#registeredRevision = written.revision;
        break;
      }
      if (clock.nowMs() >= deadlineMs) {
        await coordinator.leaseRevoke(lease.id);
        throw new Error(
          `Cannot register node ${record.nodeId}: another process holds its key ${key} and keeps it alive`,
        );
      }
      await clock.sleep(registerRetryMs);
    }
    this.#leaseId = lease.id;
    this.#keeper = initialLeaseKeeper(leaseTtlMs, sentAtMs);
    this.#deps.logger.info("node registered", { node_id: record.nodeId, lease: lease.id });
  }
}
