import {
  type Compare,
  type KeyRange,
  type KeyValue,
  noLease,
  type Txn,
  type TxnOp,
  type TxnResponse,
  type TxnResult,
  type WatchEvent,
} from "../coordinator.ts";
import { CoordinatorAnswerError } from "../coordinator_errors.ts";

/**
 * etcd's v3 JSON gateway encoding, both ways, with no I/O: keys and values travel as base64 of
 * their bytes, 64-bit numbers as decimal strings, and fields at their default (false, 0, PUT) are
 * left out of answers.
 */

type Json = Record<string, unknown>;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function toBase64(text: string): string {
  const bytes = encoder.encode(text);
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

export function fromBase64(encoded: unknown): string {
  if (encoded === undefined || encoded === null || encoded === "") return "";
  if (typeof encoded !== "string") {
    throw new CoordinatorAnswerError(`expected base64 text, got ${typeof encoded}`);
  }
  const binary = atob(encoded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return decoder.decode(bytes);
}

/** A gateway number (a decimal string, or absent for 0) as a number; revisions fit in 2^53. */
export function numberOf(value: unknown): number {
  if (value === undefined || value === null) return 0;
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isSafeInteger(n)) throw new CoordinatorAnswerError(`expected an integer, got ${String(value)}`);
  return n;
}

/** The gateway's `key` and `range_end` for a key or a prefix. */
export function rangeJson(range: KeyRange): Json {
  const key = toBase64(range.key);
  if (range.prefix !== true) return { key };
  return { key, range_end: prefixEndBase64(range.key) };
}

/** The end of a prefix range: the prefix's bytes with the last one below 0xff raised by one. */
function prefixEndBase64(prefix: string): string {
  const bytes = [...encoder.encode(prefix)];
  while (bytes.length > 0 && bytes[bytes.length - 1] === 0xff) bytes.pop();
  if (bytes.length === 0) return btoa("\u0000");
  bytes[bytes.length - 1]! += 1;
  return btoa(String.fromCharCode(...bytes));
}

const compareResults = { equal: "EQUAL", notEqual: "NOT_EQUAL", less: "LESS", greater: "GREATER" } as const;
const compareTargets = {
  createRevision: ["CREATE", "create_revision"],
  modRevision: ["MOD", "mod_revision"],
  version: ["VERSION", "version"],
  value: ["VALUE", "value"],
} as const;

function compareJson(compare: Compare): Json {
  const [target, field] = compareTargets[compare.target];
  const value = compare.target === "value" ? toBase64(compare.value) : String(compare.value);
  return { key: toBase64(compare.key), result: compareResults[compare.result], target, [field]: value };
}

function opJson(op: TxnOp): Json {
  switch (op.kind) {
    case "put": {
      const put: Json = { key: toBase64(op.key), value: toBase64(op.value) };
      if (op.lease !== undefined && op.lease !== noLease) put.lease = op.lease;
      return { request_put: put };
    }
    case "delete":
      return { request_delete_range: rangeJson(op) };
    case "range":
      return { request_range: rangeJson(op) };
  }
}

export function txnJson(txn: Txn): Json {
  return {
    compare: txn.compare.map(compareJson),
    success: txn.success.map(opJson),
    failure: (txn.failure ?? []).map(opJson),
  };
}

export function keyValueOf(json: Json): KeyValue {
  return {
    key: fromBase64(json.key),
    value: fromBase64(json.value),
    createRevision: numberOf(json.create_revision),
    modRevision: numberOf(json.mod_revision),
    version: numberOf(json.version),
    lease: json.lease === undefined ? noLease : String(json.lease),
  };
}

export function kvsOf(json: Json): KeyValue[] {
  const kvs = json.kvs;
  if (kvs === undefined) return [];
  if (!Array.isArray(kvs)) throw new CoordinatorAnswerError("kvs is not a list");
  return kvs.map((kv) => keyValueOf(kv as Json));
}

export function revisionOf(json: Json): number {
  return numberOf((json.header as Json | undefined)?.revision);
}

/** A transaction's answer, matched against the ops of the branch that ran. */
export function txnResultOf(json: Json, txn: Txn): TxnResult {
  const succeeded = json.succeeded === true;
  const ops = succeeded ? txn.success : txn.failure ?? [];
  const answers = (json.responses ?? []) as Json[];
  if (answers.length !== ops.length) {
    throw new CoordinatorAnswerError(
      `the transaction answered ${answers.length} responses to ${ops.length} operations`,
    );
  }
  const responses: TxnResponse[] = ops.map((op, i) => {
    const answer = answers[i]!;
    if (op.kind === "put") return { kind: "put" };
    if (op.kind === "delete") {
      return {
        kind: "delete",
        deleted: numberOf((answer.response_delete_range as Json | undefined)?.deleted),
      };
    }
    return { kind: "range", kvs: kvsOf((answer.response_range ?? {}) as Json) };
  });
  return { succeeded, revision: revisionOf(json), responses };
}

export function watchEventsOf(json: Json): WatchEvent[] {
  const events = (json.events ?? []) as Json[];
  return events.map((event) => ({
    kind: event.type === "DELETE" ? "delete" : "put",
    kv: keyValueOf(event.kv as Json),
  }));
}
