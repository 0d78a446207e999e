import { pack, unpack } from "msgpackr";
import type { TxnPhase, TxnRecord } from "../core/txn_state.ts";

/**
 * The records of the internal topic `__transaction_state`, as the transaction coordinator writes and
 * reads them back (docs/FORMAT.md, "Transaction records"). A record's key is its transactional id;
 * its value the id's state after a transition, or null (a tombstone) once the id expired. Keys and
 * values are msgpack arrays whose first element is a version:
 *
 *   key    [1, "t", transactionalId]
 *   value  [1, producerId, producerEpoch, timeoutMs, phase, [partition...], startedAtMs, updatedAtMs]
 */
export const txnRecordVersion = 1;

/** A transactional id's record: its state, or null once it expired. */
export interface TxnLogRecord {
  transactionalId: string;
  value: TxnRecord | null;
}

/** A record that cannot be read back; the coordinator refuses to load a partition holding one. */
export class TxnRecordError extends Error {
  override name = "TxnRecordError";
}

const phases: readonly TxnPhase[] = [
  "empty",
  "ongoing",
  "prepare_commit",
  "prepare_abort",
  "complete_commit",
  "complete_abort",
];

/** The key and value bytes of a transactional id's record (value null for a tombstone). */
export function encodeTxnRecord(record: TxnLogRecord): { key: Uint8Array; value: Uint8Array | null } {
  const v = record.value;
  return {
    key: pack([txnRecordVersion, "t", record.transactionalId]),
    value: v === null ? null : pack([
      txnRecordVersion,
      v.producerId,
      v.producerEpoch,
      v.timeoutMs,
      v.phase,
      v.partitions,
      v.startedAtMs,
      v.updatedAtMs,
    ]),
  };
}

/** Reads a record back from its key and value; throws TxnRecordError for one it cannot read. */
export function decodeTxnRecord(key: Uint8Array | null, value: Uint8Array | null): TxnLogRecord {
  if (key === null) throw new TxnRecordError("Cannot read a transaction record: it has no key");
  const k = unpackArray(key, "key");
  if (k[0] !== txnRecordVersion || k[1] !== "t" || k.length !== 3 || typeof k[2] !== "string") {
    throw new TxnRecordError("Cannot read a transaction record: its key is of no known version or kind");
  }
  const transactionalId = k[2];
  if (value === null) return { transactionalId, value: null };
  const v = unpackArray(value, "value");
  if (v[0] !== txnRecordVersion || v.length !== 8) {
    throw new TxnRecordError(
      `Cannot read the record of ${transactionalId}: its value is of an unknown version`,
    );
  }
  const phase = v[4];
  if (!phases.includes(phase as TxnPhase)) {
    throw new TxnRecordError(`Cannot read the record of ${transactionalId}: no phase ${String(phase)}`);
  }
  const partitions = v[5];
  if (!Array.isArray(partitions) || !partitions.every((p) => typeof p === "string")) {
    throw new TxnRecordError(`Cannot read the record of ${transactionalId}: its partitions are not names`);
  }
  const at = (i: number, what: string) => integer(v[i], what, transactionalId);
  return {
    transactionalId,
    value: {
      transactionalId,
      producerId: at(1, "producer id"),
      producerEpoch: at(2, "producer epoch"),
      timeoutMs: at(3, "timeout"),
      phase: phase as TxnPhase,
      partitions: partitions as string[],
      startedAtMs: at(6, "start"),
      updatedAtMs: at(7, "last update"),
    },
  };
}

function unpackArray(bytes: Uint8Array, what: string): unknown[] {
  let decoded: unknown;
  try {
    decoded = unpack(bytes);
  } catch (error) {
    throw new TxnRecordError(`Cannot read a transaction record's ${what}: it is not msgpack`, {
      cause: error,
    });
  }
  if (!Array.isArray(decoded)) {
    throw new TxnRecordError(`Cannot read a transaction record's ${what}: not an array`);
  }
  return decoded;
}

function integer(value: unknown, what: string, transactionalId: string): number {
  if (!Number.isSafeInteger(value)) {
    throw new TxnRecordError(`Cannot read the record of ${transactionalId}: its ${what} is not an integer`);
  }
  return value as number;
}
