import { assert } from "../runtime/assert.ts";
import { DueHeap } from "../runtime/cooperation/due_looks.ts";
import { stepTxn, txnDueMs, wantsFreshProducerId } from "./core/txn_core.ts";
import type { TxnEffect, TxnEvent } from "./core/txn_events.ts";
import type { TxnSettings, TxnState } from "./core/txn_state.ts";

/** Ids one tick steps because time alone changed them; the rest wait a tick. */
export const dueTxnsPerTickMax = 256;

/** The bounds of one coordinated partition of `__transaction_state`. */
export interface TxnPartitionSettings extends TxnSettings {
  /** Transactional ids the partition keeps state for, at most. */
  transactionalIdsMax: number;
  /** Transactions open at once (ongoing, or ending) among its ids, at most. */
  openTransactionsMax: number;
}

/**
 * The transactional ids one partition of `__transaction_state` coordinates while this node leads it:
 * each id's state, stepped one event at a time (`stepTxn`), the partition's bounds checked first,
 * and the ids whose timeouts and expiries come due found by a due-time heap, not a sweep. Pure: the
 * effects it returns are the shell's to run, each append's end fed back as an event.
 */
export class TxnCoordinatedPartition {
  readonly index: number;
  readonly leaderEpoch: number;
  readonly #settings: TxnPartitionSettings;
  readonly #states: Map<string, TxnState>;
  readonly #due = new DueHeap<string>();
  #open = 0;

  constructor(
    index: number,
    leaderEpoch: number,
    settings: TxnPartitionSettings,
    loaded: Map<string, TxnState>,
  ) {
    this.index = index;
    this.leaderEpoch = leaderEpoch;
    this.#settings = settings;
    this.#states = loaded;
    for (const [id, state] of loaded) this.#track(id, undefined, state);
  }

  /** Gauge: transactional ids with state. */
  get size(): number {
    return this.#states.size;
  }

  /** Gauge: transactions open (ongoing, or ending). */
  get openTransactions(): number {
    return this.#open;
  }

  /** Every id's state. */
  states(): IterableIterator<TxnState> {
    return this.#states.values();
  }

  state(transactionalId: string): TxnState | undefined {
    return this.#states.get(transactionalId);
  }

  /** Whether an InitProducerId for the id takes a producer id never given before. */
  wantsFreshProducerId(transactionalId: string): boolean {
    return wantsFreshProducerId(this.#states.get(transactionalId) ?? null);
  }

  /** One event of an id: the partition's bounds refuse a new id or a new transaction past them. */
  step(transactionalId: string, event: TxnEvent, nowMs: number): TxnEffect[] {
    const before = this.#states.get(transactionalId);
    const refusal = this.#bound(before, event);
    if (refusal !== null) {
      assert(event.kind === "init" || event.kind === "add", "only a request is refused by a bound");
      return [{ kind: "answer", requestId: event.requestId, error: refusal, producerId: -1, epoch: -1 }];
    }
    const { state, effects } = stepTxn(before ?? null, event, nowMs, this.#settings);
    if (state === null) this.#states.delete(transactionalId);
    else this.#states.set(transactionalId, state);
    this.#track(transactionalId, before, state ?? undefined);
    return effects;
  }

  /** Steps the ids whose time came (at most `dueTxnsPerTickMax`), and returns their effects. */
  tick(nowMs: number): TxnEffect[] {
    const effects: TxnEffect[] = [];
    for (const id of this.#due.takeDue(nowMs, dueTxnsPerTickMax)) {
      effects.push(...this.step(id, { kind: "tick" }, nowMs));
    }
    return effects;
  }

  #bound(
    before: TxnState | undefined,
    event: TxnEvent,
  ): "too_many_transactional_ids" | "too_many_transactions" | null {
    if (
      event.kind === "init" && before === undefined && this.#states.size >= this.#settings.transactionalIdsMax
    ) {
      return "too_many_transactional_ids";
    }
    const opens = event.kind === "add" && before !== undefined && before.pending === null &&
      !isOpen(before) &&
      before.producerId === event.producerId && before.producerEpoch === event.epoch;
    return opens && this.#open >= this.#settings.openTransactionsMax ? "too_many_transactions" : null;
  }

  /** Keeps the open count and the due heap in step with an id's change. */
  #track(transactionalId: string, before: TxnState | undefined, after: TxnState | undefined): void {
    this.#open += (after !== undefined && isOpen(after) ? 1 : 0) -
      (before !== undefined && isOpen(before) ? 1 : 0);
    assert(this.#open >= 0 && this.#open <= this.#states.size, `${this.#open} open transactions`);
    this.#due.schedule(transactionalId, after === undefined ? Infinity : txnDueMs(after, this.#settings));
  }
}

function isOpen(state: TxnState): boolean {
  return state.phase === "ongoing" || state.phase === "prepare_commit" || state.phase === "prepare_abort";
}
