/**
 * The cluster's control plane as Strata uses it: a linearizable key-value store with revisions,
 * transactions that compare, leases and watches (the model etcd v3 serves). Membership, leadership
 * and the control state live in it; Strata never runs a consensus protocol of its own. Two
 * implementations: `EtcdCoordinator` (etcd's v3 JSON gateway) and `SimCoordinator` (in memory,
 * on the injected clock, for core tests and the simulator).
 *
 * Keys and values are text (UTF-8). Revisions are etcd's: one counter for the whole store, raised
 * by every write; a key's `createRevision` is the revision that created it (unique, increasing: a
 * natural epoch), its `modRevision` the one that last changed it.
 */

export interface KeyValue {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
  /** Writes since the key was created, 1 for the first. */
  version: number;
  /** The lease the key is bound to, or `noLease`. */
  lease: LeaseId;
}

/** A lease's id: etcd's 64-bit integer, kept as its decimal text. */
export type LeaseId = string;

export const noLease: LeaseId = "0";

export type CompareResult = "equal" | "notEqual" | "less" | "greater";

/**
 * One condition of a transaction on one key. A key that does not exist has create and mod
 * revision 0 and version 0, so `{target: "createRevision", result: "equal", value: 0}` means "absent".
 */
export type Compare =
  | {
    key: string;
    target: "createRevision" | "modRevision" | "version";
    result: CompareResult;
    value: number;
  }
  | { key: string; target: "value"; result: CompareResult; value: string };

/** A key, or every key under a prefix. */
export interface KeyRange {
  key: string;
  prefix?: boolean;
}

export type TxnOp =
  | { kind: "put"; key: string; value: string; lease?: LeaseId }
  | ({ kind: "delete" } & KeyRange)
  | ({ kind: "range" } & KeyRange);

export type TxnResponse =
  | { kind: "put" }
  | { kind: "delete"; deleted: number }
  | { kind: "range"; kvs: KeyValue[] };

export interface Txn {
  compare: Compare[];
  success: TxnOp[];
  failure?: TxnOp[];
}

export interface TxnResult {
  succeeded: boolean;
  /** The store's revision after the transaction. */
  revision: number;
  /** One per op of the branch that ran, in order. */
  responses: TxnResponse[];
}

export interface RangeResult {
  kvs: KeyValue[];
  /** The store's revision the range was read at. */
  revision: number;
}

export interface WatchEvent {
  kind: "put" | "delete";
  /** After a put, the key as written; after a delete, its key and the deleting revision. */
  kv: KeyValue;
}

export interface WatchListener {
  /** Events of one or more revisions, in revision order, never repeated. */
  events(events: readonly WatchEvent[]): void;
  /**
   * The watch ended and will deliver nothing more: closed (`error` null), or the history it
   * needed is gone (`CompactedError`: re-read the range and watch again from its revision), or
   * the store could not be reached for long enough that the implementation gave up.
   */
  ended(error: Error | null): void;
}

export interface Watch {
  /** Stops the watch; `ended(null)` follows. Closing twice is harmless. */
  close(): void;
}

/** Operations at most in one transaction (etcd's default `--max-txn-ops`). */
export const txnOpsMax = 128;

export interface Coordinator {
  /** Runs the transaction atomically: `success` when every compare holds, else `failure`. */
  txn(txn: Txn): Promise<TxnResult>;
  /** A linearizable read of a key or a prefix, in key order. */
  range(range: KeyRange): Promise<RangeResult>;
  /** A lease of `ttlMs` (whole seconds, at least the store's minimum). */
  leaseGrant(ttlMs: number): Promise<{ id: LeaseId; ttlMs: number }>;
  /** Renews the lease; rejects with `LeaseNotFoundError` once it has expired or been revoked. */
  leaseKeepAlive(id: LeaseId): Promise<{ ttlMs: number }>;
  /** Ends the lease now, deleting its keys; a lease already gone is not an error. */
  leaseRevoke(id: LeaseId): Promise<void>;
  /** Every change under `range` from revision `fromRevision` on, delivered to `listener`. */
  watch(range: KeyRange, fromRevision: number, listener: WatchListener): Watch;
  /** Ends the open watches and requests; nothing may be called after. */
  close(): Promise<void>;
}

/** True when `key` lies in `range`. */
export function inRange(range: KeyRange, key: string): boolean {
  return range.prefix === true ? key.startsWith(range.key) : key === range.key;
}
