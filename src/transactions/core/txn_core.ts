import { assert, unreachable } from "../../runtime/assert.ts";
import type {
  AddEvent,
  EndEvent,
  InitEvent,
  TxnAppendError,
  TxnEffect,
  TxnError,
  TxnStep,
} from "./txn_events.ts";
import type { TxnEvent } from "./txn_events.ts";
import {
  type AppendContinuation,
  isEpochExhausted,
  recordOf,
  stateOfRecord,
  type TxnRecord,
  type TxnSettings,
  type TxnState,
} from "./txn_state.ts";

/**
 * The transaction coordinator's decisions for one transactional id, one event at a time:
 * `(state, event, nowMs) → {state, effects}`, with no I/O and no clock of its own (docs/DESIGN.md,
 * "Transactions"). Every change of the id's state is a record appended to the transaction log
 * first (`append`), and takes effect when the log has it (`appended`); meanwhile the id is pending,
 * and every request is answered CONCURRENT_TRANSACTIONS. Kafka's coordinator decides the same.
 */
export function stepTxn(
  state: TxnState | null,
  event: TxnEvent,
  nowMs: number,
  settings: TxnSettings,
): TxnStep {
  switch (event.kind) {
    case "init":
      return init(state, event, nowMs, settings);
    case "add":
      return add(state, event, nowMs, settings);
    case "end":
      return end(state, event, nowMs);
    case "appended":
      return appended(must(state, event.kind));
    case "append_failed":
      return appendFailed(must(state, event.kind), event.error);
    case "markers_written":
      return markersWritten(must(state, event.kind), nowMs);
    case "tick":
      return state === null ? { state, effects: [] } : tick(state, nowMs, settings);
    default:
      return unreachable(event, "a transaction event");
  }
}

/** Whether InitProducerId for `state` takes a new producer id: a new id, or one whose epoch is exhausted. */
export function wantsFreshProducerId(state: TxnState | null): boolean {
  if (state === null) return true;
  const between = state.phase === "empty" || state.phase === "complete_commit" ||
    state.phase === "complete_abort";
  return state.pending === null && between && isEpochExhausted(state.producerEpoch);
}

/**
 * The state of an id as the transaction log's last record of it holds it, when a coordinator takes
 * its partition over: a transaction whose end was decided has its markers written again (a marker
 * twice is harmless), and an open one is left to its timeout.
 */
export function loadTxn(record: TxnRecord): TxnStep {
  const state = stateOfRecord(record);
  if (record.phase !== "prepare_commit" && record.phase !== "prepare_abort") return { state, effects: [] };
  return { state: { ...state, pending: { kind: "markers" } }, effects: [markersOf(state)] };
}

/**
 * When time alone next changes `state` (clock ms): an open transaction's timeout, an idle id's
 * expiry, a completion the log refused; `Infinity` while it waits for an event.
 */
export function txnDueMs(state: TxnState, settings: TxnSettings): number {
  if (state.pending?.kind === "markers_written") return -Infinity;
  if (state.pending !== null) return Infinity;
  if (state.phase === "ongoing") return state.startedAtMs + state.timeoutMs + 1;
  const between = state.phase === "empty" || state.phase === "complete_commit" ||
    state.phase === "complete_abort";
  return between ? state.updatedAtMs + settings.transactionalIdExpirationMs : Infinity;
}

function must(state: TxnState | null, what: string): TxnState {
  assert(state !== null, `Cannot apply ${what} to a transactional id without state`);
  return state;
}

const answer = (requestId: number, error: TxnError, producerId = -1, epoch = -1): TxnEffect => ({
  kind: "answer",
  requestId,
  error,
  producerId,
  epoch,
});

const refused = (state: TxnState | null, requestId: number, error: TxnError): TxnStep => ({
  state,
  effects: [answer(requestId, error)],
});

/** The state with `record` pending in the log, then `then`; the append is the step's effect. */
function pendingAppend(state: TxnState, record: TxnRecord | null, then: AppendContinuation): TxnStep {
  return {
    state: { ...state, pending: { kind: "append", record, then } },
    effects: [{ kind: "append", transactionalId: state.transactionalId, record }],
  };
}

function init(state: TxnState | null, e: InitEvent, nowMs: number, settings: TxnSettings): TxnStep {
  if (e.transactionalId === "") return refused(state, e.requestId, "invalid_request");
  if (e.timeoutMs <= 0 || e.timeoutMs > settings.transactionMaxTimeoutMs) {
    return refused(state, e.requestId, "invalid_transaction_timeout");
  }
  const current = state ?? newState(e, nowMs);
  if (current.pending !== null) return refused(state, e.requestId, "concurrent_transactions");
  if (e.expected !== null && !knowsProducer(current, e.expected)) {
    return refused(state, e.requestId, "producer_fenced");
  }
  switch (current.phase) {
    case "prepare_commit":
    case "prepare_abort":
      return refused(state, e.requestId, "concurrent_transactions");
    case "ongoing":
      // A new producer with this id fences the old one: its transaction is aborted, and the new one
      // asks again once the abort is complete.
      return fenceAndAbort(current, nowMs, e.requestId);
    case "empty":
    case "complete_commit":
    case "complete_abort":
      return bumpEpoch(current, e, nowMs);
    default:
      return unreachable(current.phase, "a transaction phase");
  }
}

/** A transactional id first seen: a new producer id, at epoch -1 until its first record is written. */
function newState(e: InitEvent, nowMs: number): TxnState {
  assert(
    e.freshProducerId !== null,
    "InitProducerId of a new transactional id comes with a fresh producer id",
  );
  return stateOfRecord({
    transactionalId: e.transactionalId,
    producerId: e.freshProducerId,
    producerEpoch: -1,
    timeoutMs: e.timeoutMs,
    phase: "empty",
    partitions: [],
    startedAtMs: -1,
    updatedAtMs: nowMs,
  });
}

/** KIP-360: the producer id a client passes is this id's, or its last one when that one's epoch ran out. */
function knowsProducer(state: TxnState, expected: { producerId: number; epoch: number }): boolean {
  return state.producerEpoch === -1 || expected.producerId === state.producerId ||
    (expected.producerId === state.lastProducerId && isEpochExhausted(expected.epoch));
}

/**
 * InitProducerId between transactions: the epoch goes up by one (a new producer id at epoch 0 once
 * it ran out); a KIP-360 retry of a bump already made gets the same epoch again.
 */
function bumpEpoch(state: TxnState, e: InitEvent, nowMs: number): TxnStep {
  const base = {
    ...recordOf(state),
    phase: "empty" as const,
    partitions: [],
    startedAtMs: -1,
    updatedAtMs: nowMs,
  };
  const expected = e.expected;
  if (
    isEpochExhausted(state.producerEpoch) && (expected === null || expected.epoch === state.producerEpoch)
  ) {
    assert(e.freshProducerId !== null, "an exhausted epoch's InitProducerId comes with a fresh producer id");
    const record = { ...base, producerId: e.freshProducerId, producerEpoch: 0, timeoutMs: e.timeoutMs };
    const last = { lastProducerId: state.producerId, lastProducerEpoch: expected?.epoch ?? -1 };
    return pendingAppend(state, record, { kind: "init", requestId: e.requestId, ...last });
  }
  let epoch = state.producerEpoch + 1;
  let lastProducerEpoch = -1;
  if (expected !== null) {
    if (state.producerEpoch === -1 || expected.epoch === state.producerEpoch) {
      lastProducerEpoch = state.producerEpoch;
    } else if (expected.epoch === state.lastProducerEpoch) {
      epoch = state.producerEpoch;
      lastProducerEpoch = state.lastProducerEpoch;
    } else return refused(state, e.requestId, "producer_fenced");
  }
  const record = { ...base, producerEpoch: epoch, timeoutMs: e.timeoutMs };
  const last = { lastProducerId: state.producerId, lastProducerEpoch };
  return pendingAppend(state, record, { kind: "init", requestId: e.requestId, ...last });
}

/**
 * Aborts the ongoing transaction at a bumped epoch, so that the producer that opened it is fenced
 * (a new InitProducerId, or the transaction's timeout). The bump holds in memory at once; an append
 * that fails keeps it, and the next fence does not bump again.
 */
function fenceAndAbort(state: TxnState, nowMs: number, requestId: number | null): TxnStep {
  assert(state.phase === "ongoing" && state.pending === null, "only an ongoing transaction is fenced");
  const epoch = state.failedEpochFence ? state.producerEpoch : state.producerEpoch + 1;
  assert(
    epoch <= 32_767,
    `Cannot fence producer ${state.producerId}: its epoch ${epoch} is past the largest`,
  );
  const fenced = { ...state, producerEpoch: epoch, lastProducerEpoch: -1 };
  const record = { ...recordOf(fenced), phase: "prepare_abort" as const, updatedAtMs: nowMs };
  return pendingAppend(fenced, record, {
    kind: "prepare",
    requestId,
    answer: "concurrent_transactions",
    fence: true,
  });
}

/** The checks a request naming the id's producer passes first. */
function producerCheck(state: TxnState | null, producerId: number, epoch: number): TxnError {
  if (state === null || state.producerId !== producerId) return "invalid_producer_id_mapping";
  if (state.producerEpoch !== epoch) return "producer_fenced";
  if (state.pending !== null) return "concurrent_transactions";
  return "none";
}

function add(state: TxnState | null, e: AddEvent, nowMs: number, settings: TxnSettings): TxnStep {
  const error = producerCheck(state, e.producerId, e.epoch);
  if (error !== "none") return refused(state, e.requestId, error);
  const current = state!;
  if (current.phase === "prepare_commit" || current.phase === "prepare_abort") {
    return refused(state, e.requestId, "concurrent_transactions");
  }
  const ongoing = current.phase === "ongoing";
  const joined = new Set(ongoing ? current.partitions : []);
  const before = joined.size;
  for (const p of e.partitions) joined.add(p);
  if (ongoing && joined.size === before) return refused(state, e.requestId, "none");
  if (joined.size > settings.partitionsPerTransactionMax) {
    return refused(state, e.requestId, "too_many_partitions");
  }
  const record: TxnRecord = {
    ...recordOf(current),
    phase: "ongoing",
    partitions: [...joined].sort(),
    // The timeout runs from the first partition: adding more never extends it.
    startedAtMs: ongoing ? current.startedAtMs : nowMs,
    updatedAtMs: nowMs,
  };
  return pendingAppend(current, record, { kind: "add", requestId: e.requestId });
}

function end(state: TxnState | null, e: EndEvent, nowMs: number): TxnStep {
  const error = producerCheck(state, e.producerId, e.epoch);
  if (error !== "none") return refused(state, e.requestId, error);
  const current = state!;
  switch (current.phase) {
    case "ongoing": {
      const phase = e.commit ? "prepare_commit" : "prepare_abort";
      const record = { ...recordOf(current), phase, updatedAtMs: nowMs } as const;
      return pendingAppend(current, record, {
        kind: "prepare",
        requestId: e.requestId,
        answer: "none",
        fence: false,
      });
    }
    case "prepare_commit":
      return refused(state, e.requestId, e.commit ? "concurrent_transactions" : "invalid_txn_state");
    case "prepare_abort":
      return refused(state, e.requestId, e.commit ? "invalid_txn_state" : "concurrent_transactions");
    case "complete_commit":
      // A retry of the commit that completed is answered as it was; nothing is written.
      return refused(state, e.requestId, e.commit ? "none" : "invalid_txn_state");
    case "complete_abort":
      return refused(state, e.requestId, e.commit ? "invalid_txn_state" : "none");
    case "empty":
      return refused(state, e.requestId, "invalid_txn_state");
    default:
      return unreachable(current.phase, "a transaction phase");
  }
}

function markersOf(state: TxnState): TxnEffect {
  assert(state.phase === "prepare_commit" || state.phase === "prepare_abort", "markers follow a decided end");
  return {
    kind: "write_markers",
    transactionalId: state.transactionalId,
    producerId: state.producerId,
    epoch: state.producerEpoch,
    commit: state.phase === "prepare_commit",
    partitions: state.partitions,
  };
}

/** The log has the pending record: the state takes it, and the request that waited is answered. */
function appended(state: TxnState): TxnStep {
  const pending = state.pending;
  assert(
    pending?.kind === "append",
    `Cannot complete an append of ${state.transactionalId}: none is pending`,
  );
  const then = pending.then;
  assert(
    (pending.record === null) === (then.kind === "expire"),
    "an expiry, and only one, appends a tombstone",
  );
  if (pending.record === null) {
    return { state: null, effects: [{ kind: "forget", transactionalId: state.transactionalId }] };
  }
  const next: TxnState = { ...state, ...pending.record, pending: null };
  switch (then.kind) {
    case "init": {
      const { lastProducerId, lastProducerEpoch } = then;
      const done = { ...next, lastProducerId, lastProducerEpoch, failedEpochFence: false };
      return { state: done, effects: [answer(then.requestId, "none", done.producerId, done.producerEpoch)] };
    }
    case "add":
      return { state: next, effects: [answer(then.requestId, "none")] };
    case "prepare": {
      const effects: TxnEffect[] = then.requestId === null ? [] : [answer(then.requestId, then.answer)];
      const writing = { ...next, pending: { kind: "markers" } as const, failedEpochFence: false };
      return { state: writing, effects: [...effects, markersOf(writing)] };
    }
    case "complete":
      return { state: next, effects: [] };
    case "expire":
      return unreachable(then as never, "an expiry with a record (asserted above)");
    default:
      return unreachable(then, "an append continuation");
  }
}

/**
 * The log refused the pending record: the state stays as it was, and the request that waited hears
 * why. A fence that failed keeps its bumped epoch; a completion is written again at the next tick.
 */
function appendFailed(state: TxnState, error: TxnAppendError): TxnStep {
  const pending = state.pending;
  assert(pending?.kind === "append", `Cannot fail an append of ${state.transactionalId}: none is pending`);
  const then = pending.then;
  const back = { ...state, pending: null };
  switch (then.kind) {
    case "init":
    case "add":
      return refused(back, then.requestId, error);
    case "prepare": {
      const failed = { ...back, failedEpochFence: then.fence || state.failedEpochFence };
      return then.requestId === null
        ? { state: failed, effects: [] }
        : refused(failed, then.requestId, error);
    }
    case "complete":
      return { state: { ...state, pending: { kind: "markers_written" } }, effects: [] };
    case "expire":
      return { state: back, effects: [] };
    default:
      return unreachable(then, "an append continuation");
  }
}

/** Every partition has its marker: the transaction completes, with its partitions cleared. */
function markersWritten(state: TxnState, nowMs: number): TxnStep {
  assert(
    state.pending?.kind === "markers",
    `Cannot complete ${state.transactionalId}: no markers are pending`,
  );
  return completion(state, nowMs);
}

function completion(state: TxnState, nowMs: number): TxnStep {
  const phase = state.phase === "prepare_commit" ? "complete_commit" : "complete_abort";
  const record = { ...recordOf(state), phase, partitions: [], updatedAtMs: nowMs } as const;
  return pendingAppend(state, record, { kind: "complete" });
}

function tick(state: TxnState, nowMs: number, settings: TxnSettings): TxnStep {
  if (state.pending?.kind === "markers_written") return completion(state, nowMs);
  if (state.pending !== null) return { state, effects: [] };
  if (state.phase === "ongoing" && state.startedAtMs + state.timeoutMs < nowMs) {
    const step = fenceAndAbort(state, nowMs, null);
    const told: TxnEffect = {
      kind: "timed_out",
      transactionalId: state.transactionalId,
      producerId: state.producerId,
    };
    return { state: step.state, effects: [told, ...step.effects] };
  }
  const between = state.phase === "empty" || state.phase === "complete_commit" ||
    state.phase === "complete_abort";
  if (between && state.updatedAtMs <= nowMs - settings.transactionalIdExpirationMs) {
    return pendingAppend(state, null, { kind: "expire" });
  }
  return { state, effects: [] };
}
