import { pack, unpack } from "msgpackr";

/**
 * The records of the internal topic `__consumer_offsets`, as the group coordinator writes and reads
 * them back. A record's key names what it is about and its value is the latest word on it; a null
 * value (a tombstone) says it is gone. Keys and values are msgpack arrays whose first element is a
 * version, so that a later format can be told apart (docs/FORMAT.md, "Consumer group records"):
 *
 *   committed offset   key [1, "o", group, topic, partition]   value [1, offset, leaderEpoch, metadata, commitMs]
 *   group metadata     key [1, "g", group]                     value [1, protocolType, generation, protocol,
 *                                                                      leader, [member...]]
 *   member             [memberId, groupInstanceId, clientId, clientHost, sessionTimeoutMs,
 *                       rebalanceTimeoutMs, subscription, assignment]
 *   transactional      key [1, "p", producerId, group, topic, partition]
 *   offset             value [1, epoch, offset, leaderEpoch, metadata, commitMs]
 *   transaction's end  key [1, "e", producerId]                value [1, epoch, commit]
 *
 * A transactional offset (TxnOffsetCommit) is pending until its transaction's end: a commit makes
 * the producer's pending offsets committed ones, an abort drops them.
 */

export const offsetsRecordVersion = 1;

/** One partition's committed offset in a group, with what the commit carried. */
export interface CommittedOffset {
  offset: number;
  /** The leader epoch the consumer saw at the offset; -1 when it did not say. */
  leaderEpoch: number;
  /** The commit's metadata string; null when it sent none. */
  metadata: string | null;
  /** When the coordinator took the commit (wall clock, ms). */
  commitTimestampMs: number;
}

/** A member of a group as its metadata record keeps it. */
export interface StoredMember {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  /** Its metadata for the group's protocol (a consumer's subscription). */
  subscription: Uint8Array;
  assignment: Uint8Array;
}

/** A group's metadata as of its last completed rebalance (or its members leaving). */
export interface StoredGroup {
  protocolType: string | null;
  generation: number;
  protocol: string | null;
  leaderId: string | null;
  members: StoredMember[];
}

export type OffsetsRecord =
  | { kind: "offset"; groupId: string; topic: string; partition: number; value: CommittedOffset | null }
  | { kind: "group"; groupId: string; value: StoredGroup | null }
  | TxnOffsetRecord
  | { kind: "txn_end"; producerId: number; epoch: number; commit: boolean };

/** An offset a transactional producer committed in its transaction: pending until the transaction ends. */
export interface TxnOffsetRecord {
  kind: "txn_offset";
  producerId: number;
  epoch: number;
  groupId: string;
  topic: string;
  partition: number;
  value: CommittedOffset;
}

/** A record that cannot be read back; the coordinator refuses to load a partition holding one. */
export class OffsetsRecordError extends Error {
  override name = "OffsetsRecordError";
}

/** The key and value bytes of `record` (value null for a tombstone). */
export function encodeOffsetsRecord(record: OffsetsRecord): { key: Uint8Array; value: Uint8Array | null } {
  if (record.kind === "offset") {
    const { groupId, topic, partition, value } = record;
    return {
      key: pack([offsetsRecordVersion, "o", groupId, topic, partition]),
      value: value === null ? null : pack([
        offsetsRecordVersion,
        value.offset,
        value.leaderEpoch,
        value.metadata,
        value.commitTimestampMs,
      ]),
    };
  }
  if (record.kind === "txn_offset") {
    const { producerId, epoch, groupId, topic, partition, value } = record;
    return {
      key: pack([offsetsRecordVersion, "p", producerId, groupId, topic, partition]),
      value: pack([
        offsetsRecordVersion,
        epoch,
        value.offset,
        value.leaderEpoch,
        value.metadata,
        value.commitTimestampMs,
      ]),
    };
  }
  if (record.kind === "txn_end") {
    return {
      key: pack([offsetsRecordVersion, "e", record.producerId]),
      value: pack([offsetsRecordVersion, record.epoch, record.commit]),
    };
  }
  const { groupId, value } = record;
  return {
    key: pack([offsetsRecordVersion, "g", groupId]),
    value: value === null ? null : pack([
      offsetsRecordVersion,
      value.protocolType,
      value.generation,
      value.protocol,
      value.leaderId,
      value.members.map((m) => [
        m.memberId,
        m.groupInstanceId,
        m.clientId,
        m.clientHost,
        m.sessionTimeoutMs,
        m.rebalanceTimeoutMs,
        m.subscription,
        m.assignment,
      ]),
    ]),
  };
}

/** Reads a record back from its key and value; throws OffsetsRecordError for one it cannot read. */
export function decodeOffsetsRecord(key: Uint8Array | null, value: Uint8Array | null): OffsetsRecord {
  if (key === null) throw new OffsetsRecordError("Cannot read an offsets record: it has no key");
  const k = unpackArray(key, "key");
  if (k[0] !== offsetsRecordVersion) {
    throw new OffsetsRecordError(`Cannot read an offsets record: its key is of version ${String(k[0])}`);
  }
  if (k[1] === "o" && k.length === 5) {
    const [, , groupId, topic, partition] = k;
    return {
      kind: "offset",
      groupId: text(groupId, "group"),
      topic: text(topic, "topic"),
      partition: integer(partition, "partition"),
      value: value === null ? null : committedOffset(unpackArray(value, "value")),
    };
  }
  if (k[1] === "g" && k.length === 3) {
    return {
      kind: "group",
      groupId: text(k[2], "group"),
      value: value === null ? null : storedGroup(unpackArray(value, "value")),
    };
  }
  if (k[1] === "p" && k.length === 6) return txnOffset(k, value);
  if (k[1] === "e" && k.length === 3) {
    const v = value === null ? null : unpackArray(value, "value");
    if (v === null || v[0] !== offsetsRecordVersion || v.length !== 3 || typeof v[2] !== "boolean") {
      throw new OffsetsRecordError("Cannot read a transaction's end: its value is of an unknown version");
    }
    return {
      kind: "txn_end",
      producerId: integer(k[2], "producer id"),
      epoch: integer(v[1], "epoch"),
      commit: v[2],
    };
  }
  throw new OffsetsRecordError(`Cannot read an offsets record: its key is of no known kind`);
}

function txnOffset(k: unknown[], value: Uint8Array | null): TxnOffsetRecord {
  const v = value === null ? null : unpackArray(value, "value");
  if (v === null || v[0] !== offsetsRecordVersion || v.length !== 6) {
    throw new OffsetsRecordError("Cannot read a transactional offset: its value is of an unknown version");
  }
  return {
    kind: "txn_offset",
    producerId: integer(k[2], "producer id"),
    epoch: integer(v[1], "epoch"),
    groupId: text(k[3], "group"),
    topic: text(k[4], "topic"),
    partition: integer(k[5], "partition"),
    value: committedOffset([offsetsRecordVersion, ...v.slice(2)]),
  };
}

function committedOffset(v: unknown[]): CommittedOffset {
  if (v[0] !== offsetsRecordVersion || v.length !== 5) {
    throw new OffsetsRecordError("Cannot read a committed offset: its value is of an unknown version");
  }
  return {
    offset: integer(v[1], "offset"),
    leaderEpoch: integer(v[2], "leader epoch"),
    metadata: v[3] === null ? null : text(v[3], "metadata"),
    commitTimestampMs: integer(v[4], "commit timestamp"),
  };
}

function storedGroup(v: unknown[]): StoredGroup {
  if (v[0] !== offsetsRecordVersion || v.length !== 6 || !Array.isArray(v[5])) {
    throw new OffsetsRecordError("Cannot read a group's metadata: its value is of an unknown version");
  }
  return {
    protocolType: v[1] === null ? null : text(v[1], "protocol type"),
    generation: integer(v[2], "generation"),
    protocol: v[3] === null ? null : text(v[3], "protocol"),
    leaderId: v[4] === null ? null : text(v[4], "leader"),
    members: (v[5] as unknown[]).map(storedMember),
  };
}

function storedMember(m: unknown): StoredMember {
  if (!Array.isArray(m) || m.length !== 8) {
    throw new OffsetsRecordError("Cannot read a group's member: it is not one");
  }
  return {
    memberId: text(m[0], "member id"),
    groupInstanceId: m[1] === null ? null : text(m[1], "group instance id"),
    clientId: text(m[2], "client id"),
    clientHost: text(m[3], "client host"),
    sessionTimeoutMs: integer(m[4], "session timeout"),
    rebalanceTimeoutMs: integer(m[5], "rebalance timeout"),
    subscription: bytes(m[6], "subscription"),
    assignment: bytes(m[7], "assignment"),
  };
}

function unpackArray(bytes: Uint8Array, what: string): unknown[] {
  let decoded: unknown;
  try {
    decoded = unpack(bytes);
  } catch (error) {
    throw new OffsetsRecordError(`Cannot read an offsets record: its ${what} is not msgpack`, {
      cause: error,
    });
  }
  if (!Array.isArray(decoded)) {
    throw new OffsetsRecordError(`Cannot read an offsets record: its ${what} is not an array`);
  }
  return decoded;
}

function text(v: unknown, what: string): string {
  if (typeof v !== "string") {
    throw new OffsetsRecordError(`Cannot read an offsets record: its ${what} is not text`);
  }
  return v;
}

function integer(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) {
    throw new OffsetsRecordError(`Cannot read an offsets record: its ${what} is not an integer`);
  }
  return v;
}

function bytes(v: unknown, what: string): Uint8Array {
  if (!(v instanceof Uint8Array)) {
    throw new OffsetsRecordError(`Cannot read an offsets record: its ${what} is not bytes`);
  }
  return v;
}
