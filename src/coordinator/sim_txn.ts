import {
  type Compare,
  inRange,
  type KeyValue,
  noLease,
  type Txn,
  type TxnOp,
  type TxnResponse,
  type TxnResult,
  type WatchEvent,
} from "./coordinator.ts";

/** The simulated store's keys and revision. */
export interface StoreState {
  kvs: Map<string, KeyValue>;
  revision: number;
}

/** What a transaction did: its answer and the events its writes made. */
export interface AppliedTxn {
  result: TxnResult;
  events: WatchEvent[];
}

/**
 * Runs `txn` on `state` in the model etcd serves: the compares decide the branch, and every write
 * of the branch shares one new revision (none when the branch writes nothing).
 */
export function applyTxn(state: StoreState, txn: Txn): AppliedTxn {
  const succeeded = txn.compare.every((compare) => holds(state, compare));
  const ops = succeeded ? txn.success : txn.failure ?? [];
  const writes = ops.some((op) =>
    op.kind !== "range" && (op.kind === "put" || matching(state, op).length > 0)
  );
  const revision = writes ? state.revision + 1 : state.revision;
  const events: WatchEvent[] = [];
  const responses = ops.map((op) => applyOp(state, op, revision, events));
  state.revision = revision;
  return { result: { succeeded, revision, responses }, events };
}

function applyOp(state: StoreState, op: TxnOp, revision: number, events: WatchEvent[]): TxnResponse {
  if (op.kind === "range") return { kind: "range", kvs: matching(state, op).map((kv) => ({ ...kv })) };
  if (op.kind === "delete") {
    const gone = matching(state, op);
    for (const kv of gone) {
      state.kvs.delete(kv.key);
      events.push({ kind: "delete", kv: { ...kv, value: "", modRevision: revision, version: 0 } });
    }
    return { kind: "delete", deleted: gone.length };
  }
  const before = state.kvs.get(op.key);
  const kv: KeyValue = {
    key: op.key,
    value: op.value,
    createRevision: before?.createRevision ?? revision,
    modRevision: revision,
    version: (before?.version ?? 0) + 1,
    lease: op.lease ?? noLease,
  };
  state.kvs.set(op.key, kv);
  events.push({ kind: "put", kv: { ...kv } });
  return { kind: "put" };
}

function matching(state: StoreState, range: { key: string; prefix?: boolean }): KeyValue[] {
  if (range.prefix !== true) {
    const kv = state.kvs.get(range.key);
    return kv === undefined ? [] : [kv];
  }
  return [...state.kvs.values()].filter((kv) => inRange(range, kv.key))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

function holds(state: StoreState, compare: Compare): boolean {
  const kv = state.kvs.get(compare.key);
  if (compare.target === "value") {
    // etcd: a value compare on a missing key fails, whatever the operator.
    if (kv === undefined) return false;
    return ordered(kv.value < compare.value ? -1 : kv.value > compare.value ? 1 : 0, compare.result);
  }
  const actual = kv === undefined ? 0 : kv[compare.target];
  return ordered(Math.sign(actual - compare.value), compare.result);
}

function ordered(sign: number, result: Compare["result"]): boolean {
  switch (result) {
    case "equal":
      return sign === 0;
    case "notEqual":
      return sign !== 0;
    case "less":
      return sign < 0;
    case "greater":
      return sign > 0;
  }
}
