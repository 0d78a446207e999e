import { internalAppendRefusal, ledPartitionRefusal, waitForLoad } from "../broker/internal_topic.ts";
import { isBug, rethrowBug } from "../runtime/assert.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { TxnAppendError, TxnEffect, TxnError, TxnEvent } from "./core/txn_events.ts";
import { LedTxnPartition } from "./led_txn_partition.ts";
import { MarkersNotWrittenError } from "./markers/markers_not_written.ts";
import type { TxnLog } from "./log/txn_log.ts";
import { txnPartitionOf } from "./log/txn_load.ts";
import type { TxnPartitionSettings } from "./txn_partition.ts";
import type { TxnState } from "./core/txn_state.ts";
import { writeTxnCheckpoint } from "./txn_appends.ts";

/** How often the coordinator looks at which transaction state partitions this node leads (clock ms). */
export const txnLeadershipLookIntervalMs = 200;
/** After a load that failed, how long before it is tried again (clock ms). */
export const txnLoadRetryMs = 5000;
/** After a marker write that failed, how long before it is tried again (clock ms). */
export const markerRetryMs = 500;

/** The coordinator's settings (`[transactions]`). */
export interface TxnCoordinatorSettings extends TxnPartitionSettings {
  /** Bytes appended to a partition between two checkpoints of its live records. */
  checkpointBytes: number;
}

/** A transaction's end, as its markers carry it to every partition of the transaction. */
export interface TxnMarkerRequest {
  producerId: number;
  epoch: number;
  commit: boolean;
  /** The leader epoch of the coordinating partition: a marker of an older coordinator is refused. */
  coordinatorEpoch: number;
  /** `txnPartitionKey`s. */
  partitions: readonly string[];
}

/** Writes a transaction's markers; resolves once every partition holds its marker, else throws. */
export interface TxnMarkerWriter {
  write(request: TxnMarkerRequest): Promise<void>;
}

export interface TxnCoordinatorDeps {
  log: TxnLog;
  clock: Clock;
  logger: Logger;
  settings: TxnCoordinatorSettings;
  /** Producer ids never given before (InitProducerId of a new transactional id). */
  producerIds: { next(): Promise<number> };
  markers: TxnMarkerWriter;
}

/** The coordinator's answer to a request: an error, and InitProducerId's producer id and epoch. */
export interface TxnAnswer {
  error: TxnError;
  producerId: number;
  epoch: number;
}

export interface InitRequest {
  transactionalId: string;
  timeoutMs: number;
  expected: { producerId: number; epoch: number } | null;
}

export interface AddRequest {
  transactionalId: string;
  producerId: number;
  epoch: number;
  /** `txnPartitionKey`s. */
  partitions: readonly string[];
}

export interface EndRequest {
  transactionalId: string;
  producerId: number;
  epoch: number;
  commit: boolean;
}

/** Where an id's requests go: its loaded partition, or why they cannot be served here. */
export type TxnRoute = { partition: LedTxnPartition; error: null } | { partition: null; error: TxnError };

const refusal = (error: TxnError): TxnAnswer => ({ error, producerId: -1, epoch: -1 });

/**
 * Kafka's transaction coordinator for the transactional ids whose `__transaction_state` partitions
 * this node leads: the shell around the pure steps (`txn_core.ts`, bounded per partition by
 * `TxnCoordinatedPartition`). It loads a partition when it comes to lead it (writing again the
 * markers of ends decided before) and drops it when it stops; it gives each request an id and
 * answers it when a step's effects say so; it appends each id's records one at a time per
 * partition, writes the markers through `TxnMarkerWriter`, and steps ids whose timeouts and
 * expiries come due from the pump's tick.
 */
export class TxnCoordinator {
  readonly #deps: TxnCoordinatorDeps;
  readonly #partitions = new Map<number, LedTxnPartition>();
  readonly #waiting = new Map<number, { resolve(answer: TxnAnswer): void; partition: LedTxnPartition }>();
  #nextRequestId = 1;
  #nextLeadershipLookMs = -Infinity;
  #ensuring: Promise<void> | null = null;
  #closed = false;
  /** Transactions aborted because they outlived their timeout (a counter). */
  timedOut = 0;
  /** Transactions whose every marker is written, by outcome (counters). */
  readonly ended = { committed: 0, aborted: 0 };
  /** Marker writes that failed and were tried again (a counter). */
  markerFailures = 0;
  /** Partition loads that completed, their total and longest time (clock ms; Kafka's partition-load-time). */
  readonly loads = { count: 0, totalMs: 0, maxMs: 0 };

  constructor(deps: TxnCoordinatorDeps) {
    this.#deps = deps;
  }

  /** The transaction state partition of an id, or null while the topic does not exist. */
  partitionOf(transactionalId: string): number | null {
    const count = this.#deps.log.partitionCount();
    return count === null ? null : txnPartitionOf(transactionalId, count);
  }

  /** Gauges: transactional ids this node coordinates, and their transactions open (or ending). */
  gauges(): { transactionalIds: number; openTransactions: number } {
    let transactionalIds = 0;
    let openTransactions = 0;
    for (const p of this.loadedPartitions()) {
      transactionalIds += p.txns.size;
      openTransactions += p.txns.openTransactions;
    }
    return { transactionalIds, openTransactions };
  }

  /** The loaded partitions this node leads. */
  loadedPartitions(): LedTxnPartition[] {
    return [...this.#partitions.values()].filter((p) => p.status === "loaded");
  }

  /** Creates `__transaction_state` when it does not exist yet, and looks at once at what this node leads. */
  ensureStateTopic(): Promise<void> {
    if (this.#ensuring === null) {
      this.#ensuring = this.#deps.log.ensure().then(() => {
        this.#nextLeadershipLookMs = -Infinity;
        this.onTick(this.#deps.clock.nowMs());
      }).finally(() => {
        this.#ensuring = null;
      });
    }
    return this.#ensuring;
  }

  /** Resolves once the id's partition is loaded here, or failed, or is not led here, or `timeoutMs` passed. */
  async whenLoaded(transactionalId: string, timeoutMs: number): Promise<void> {
    if (this.route(transactionalId).error !== "coordinator_load_in_progress") return;
    this.#nextLeadershipLookMs = -Infinity;
    this.onTick(this.#deps.clock.nowMs());
    const p = this.#partitions.get(this.partitionOf(transactionalId)!);
    if (p === undefined || p.status !== "loading") return;
    await waitForLoad(this.#deps.clock, p.loadSettled, timeoutMs);
  }

  /** Where an id's requests are served, checked against this node's leadership now. */
  route(transactionalId: string): TxnRoute {
    if (this.#closed) return { partition: null, error: "coordinator_not_available" };
    if (transactionalId === "") return { partition: null, error: "invalid_request" };
    const index = this.partitionOf(transactionalId);
    if (index === null) return { partition: null, error: "coordinator_not_available" };
    const p = this.#partitions.get(index);
    const error = ledPartitionRefusal(this.#closed, this.#deps.log.leaderEpoch(index), p);
    return error === null ? { partition: p!, error: null } : { partition: null, error };
  }

  /** An id's state where this node coordinates it (DescribeTransactions), or why not; null: none is known. */
  describe(transactionalId: string): { error: TxnError; state: TxnState | null } {
    const route = this.route(transactionalId);
    if (route.error !== null) return { error: route.error, state: null };
    return { error: "none", state: route.partition.txns.state(transactionalId) ?? null };
  }

  /** Every id this node coordinates, with its state (ListTransactions). */
  *states(): IterableIterator<TxnState> {
    for (const p of this.loadedPartitions()) yield* p.txns.states();
  }

  /** InitProducerId with a transactional id. */
  async init(request: InitRequest): Promise<TxnAnswer> {
    let route = this.route(request.transactionalId);
    if (route.error !== null) return refusal(route.error);
    let freshProducerId: number | null = null;
    if (route.partition.txns.wantsFreshProducerId(request.transactionalId)) {
      try {
        freshProducerId = await this.#deps.producerIds.next();
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "giving a producer id threw; the request stops");
        // As Kafka's coordinator answers an exhausted block of ids: the client asks again.
        this.#deps.logger.warn("Cannot give a transactional producer an id: the metadata commit failed", {
          error,
        });
        return refusal("coordinator_load_in_progress");
      }
      route = this.route(request.transactionalId);
      if (route.error !== null) return refusal(route.error);
      // Another request took the id past its need for a fresh one meanwhile: it is not used.
    }
    return this.#request(route.partition, request.transactionalId, {
      kind: "init",
      ...request,
      freshProducerId,
    });
  }

  /** AddPartitionsToTxn, or AddOffsetsToTxn with the group's `__consumer_offsets` partition. */
  add({ transactionalId, ...request }: AddRequest): Promise<TxnAnswer> {
    const route = this.route(transactionalId);
    if (route.error !== null) return Promise.resolve(refusal(route.error));
    return this.#request(route.partition, transactionalId, { kind: "add", ...request });
  }

  /** EndTxn. */
  end({ transactionalId, ...request }: EndRequest): Promise<TxnAnswer> {
    const route = this.route(transactionalId);
    if (route.error !== null) return Promise.resolve(refusal(route.error));
    return this.#request(route.partition, transactionalId, { kind: "end", ...request });
  }

  #request(
    p: LedTxnPartition,
    transactionalId: string,
    event: DistributiveOmit<Extract<TxnEvent, { requestId: number }>, "requestId">,
  ): Promise<TxnAnswer> {
    const requestId = this.#nextRequestId++;
    const answered = new Promise<TxnAnswer>((resolve) =>
      this.#waiting.set(requestId, { resolve, partition: p })
    );
    this.#step(p, transactionalId, { ...event, requestId } as TxnEvent);
    return answered;
  }

  #step(p: LedTxnPartition, transactionalId: string, event: TxnEvent): void {
    this.#run(p, p.txns.step(transactionalId, event, this.#deps.clock.wallMs()));
  }

  #run(p: LedTxnPartition, effects: readonly TxnEffect[]): void {
    for (const effect of effects) {
      switch (effect.kind) {
        case "answer": {
          const waiter = this.#waiting.get(effect.requestId);
          // A request of a partition unloaded meanwhile was answered NOT_COORDINATOR then.
          if (waiter === undefined) break;
          this.#waiting.delete(effect.requestId);
          waiter.resolve({ error: effect.error, producerId: effect.producerId, epoch: effect.epoch });
          break;
        }
        case "append":
          this.#append(p, effect.transactionalId, effect.record);
          break;
        case "write_markers":
          this.#writeMarkers(p, effect);
          break;
        case "timed_out":
          this.timedOut += 1;
          this.#deps.logger.info("transaction timed out; aborting it", {
            transactional_id: effect.transactionalId,
            producer_id: effect.producerId,
          });
          break;
        case "forget":
          this.#deps.logger.info("transactional id expired", { transactional_id: effect.transactionalId });
          break;
      }
    }
  }

  /** Appends an id's record in the partition's turn, then feeds the outcome back to its step. */
  #append(p: LedTxnPartition, transactionalId: string, record: TxnEffectRecord): void {
    const write = async () => {
      const appended = await this.#deps.log.append(p.index, [{ transactionalId, value: record }]);
      return appended.bytes;
    };
    p.appends.enqueue(write).then((bytes) => {
      if (!this.#current(p)) return;
      this.#step(p, transactionalId, { kind: "appended" });
      this.#appended(p, bytes);
    }, (error) => {
      rethrowBug(error, this.#deps.logger, "appending a transaction record threw; the process stops", {
        transactional_id: transactionalId,
      });
      const reason: TxnAppendError = internalAppendRefusal(error);
      this.#deps.logger.warn("transaction record not written", {
        transactional_id: transactionalId,
        partition: p.index,
        reason,
        error,
      });
      if (this.#current(p)) this.#step(p, transactionalId, { kind: "append_failed", error: reason });
    });
  }

  /** Counts appended bytes, and queues a checkpoint once enough accumulated since the last. */
  #appended(p: LedTxnPartition, bytes: number): void {
    p.appendedBytes += bytes;
    const due = Math.max(this.#deps.settings.checkpointBytes, p.checkpointBytes);
    if (p.appendedBytes < due || p.checkpointQueued) return;
    p.checkpointQueued = true;
    p.appends.enqueue(() => writeTxnCheckpoint(this.#deps.log, p)).catch((error) => {
      rethrowBug(
        error,
        this.#deps.logger,
        "writing a transaction state checkpoint threw; the process stops",
        {
          partition: p.index,
        },
      );
      this.#deps.logger.warn("transaction state checkpoint not written", { partition: p.index, error });
    }).finally(() => {
      p.checkpointQueued = false;
    });
  }

  /**
   * Writes a decided end's markers, again after `markerRetryMs` while a write fails, for as long as
   * this node leads the partition under the same epoch (a new coordinator writes them again at its
   * load); then the transaction completes.
   */
  async #writeMarkers(
    p: LedTxnPartition,
    effect: Extract<TxnEffect, { kind: "write_markers" }>,
  ): Promise<void> {
    const { transactionalId, producerId, epoch, commit, partitions } = effect;
    let request = { producerId, epoch, commit, coordinatorEpoch: p.leaderEpoch, partitions };
    // Bounded by the partition's leadership: each failed attempt waits `markerRetryMs` first.
    while (this.#current(p)) {
      try {
        await this.#deps.markers.write(request);
        if (commit) this.ended.committed++;
        else this.ended.aborted++;
        if (this.#current(p)) this.#step(p, transactionalId, { kind: "markers_written" });
        return;
      } catch (error) {
        if (isBug(error)) {
          rethrowBug(error, this.#deps.logger, "writing transaction markers threw; the process stops", {
            transactional_id: transactionalId,
          });
        }
        this.markerFailures++;
        // Only the partitions still without their marker are written again.
        if (error instanceof MarkersNotWrittenError) request = { ...request, partitions: error.remaining };
        this.#deps.logger.warn("transaction markers not written; trying again", {
          transactional_id: transactionalId,
          producer_id: producerId,
          error,
        });
      }
      await this.#deps.clock.sleep(markerRetryMs);
    }
  }

  #current(p: LedTxnPartition): boolean {
    return !this.#closed && this.#partitions.get(p.index) === p;
  }

  /**
   * The tick: which transaction state partitions this node leads (every `txnLeadershipLookIntervalMs`),
   * loading those it came to lead and dropping those it lost; then the ids whose time came.
   */
  onTick(nowMs: number): void {
    if (this.#closed) return;
    if (nowMs >= this.#nextLeadershipLookMs) {
      this.#nextLeadershipLookMs = nowMs + txnLeadershipLookIntervalMs;
      this.#lookAtLeadership(nowMs);
    }
    // The ids' times are wall-clock times: their records keep them across restarts and nodes.
    const wallMs = this.#deps.clock.wallMs();
    for (const p of this.loadedPartitions()) this.#run(p, p.txns.tick(wallMs));
  }

  #lookAtLeadership(nowMs: number): void {
    const count = this.#deps.log.partitionCount() ?? 0;
    for (let index = 0; index < count; index++) {
      const epoch = this.#deps.log.leaderEpoch(index);
      const held = this.#partitions.get(index);
      const retry = held?.status === "failed" && nowMs >= held.retryAtMs;
      if (held !== undefined && (held.leaderEpoch !== epoch || retry)) this.#unload(held);
      if (epoch !== null && (held === undefined || held.leaderEpoch !== epoch || retry)) {
        this.#load(index, epoch);
      }
    }
  }

  #load(index: number, epoch: number): void {
    const p = new LedTxnPartition(index, epoch);
    this.#partitions.set(index, p);
    this.#deps.logger.info("loading transaction state partition", { partition: index, leader_epoch: epoch });
    const startedMs = this.#deps.clock.nowMs();
    this.#deps.log.replay(index, (record) => p.replayed(record)).then((replayed) => {
      if (!this.#current(p)) return;
      const effects = p.loaded(this.#deps.settings);
      this.#appended(p, replayed.bytes);
      const loadMs = this.#deps.clock.nowMs() - startedMs;
      this.loads.count++;
      this.loads.totalMs += loadMs;
      this.loads.maxMs = Math.max(this.loads.maxMs, loadMs);
      this.#deps.logger.info("transaction state partition loaded", {
        partition: index,
        ids: p.txns.size,
        load_ms: loadMs,
      });
      this.#run(p, effects);
    }).catch((error) => {
      rethrowBug(error, this.#deps.logger, "loading a transaction state partition threw; the process stops", {
        partition: index,
      });
      if (!this.#current(p)) return;
      p.failed(this.#deps.clock.nowMs() + txnLoadRetryMs);
      this.#deps.logger.error("transaction state partition not loaded", { partition: index, error });
    });
  }

  /** Stops coordinating a partition's ids: every request they had waiting is told `error`. */
  #unload(p: LedTxnPartition, error: TxnError = "not_coordinator"): void {
    this.#partitions.delete(p.index);
    for (const [requestId, waiter] of this.#waiting) {
      if (waiter.partition !== p) continue;
      this.#waiting.delete(requestId);
      waiter.resolve(refusal(error));
    }
    this.#deps.logger.info("transaction state partition unloaded", { partition: p.index });
  }

  /** Stops: every waiting request is answered COORDINATOR_NOT_AVAILABLE; queued appends finish. */
  async close(): Promise<void> {
    const partitions = [...this.#partitions.values()];
    for (const p of partitions) this.#unload(p, "coordinator_not_available");
    this.#closed = true;
    await Promise.all(partitions.map((p) => p.appends.settled()));
  }
}

type TxnEffectRecord = Extract<TxnEffect, { kind: "append" }>["record"];

/** `Omit` over each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
