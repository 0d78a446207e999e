import {
  AlreadyExistsError,
  NotEnoughReplicasError,
  NotLeaderError,
  ReplicationTimeoutError,
  ResourceNotFoundError,
  UnavailableError,
} from "./broker_errors.ts";
import type { Catalog } from "./catalog/catalog.ts";
import type { DataPlane } from "./data_plane.ts";
import { defaultTopicOptions, type TopicOptions } from "./catalog/topic_options.ts";
import { assert } from "../runtime/assert.ts";
import { QueueFullError } from "../runtime/wait_errors.ts";
import type { Clock } from "../runtime/clock/clock.ts";

/** Records one replay read takes at most: its poll decodes them in pieces, on the loop's turns. */
const replayRecordsPerReadMax = 1024;
/** Bytes one replay read takes at most. */
const replayBytesPerReadMax = 1024 * 1024;

/** Records one append of a checkpoint carries at most. */
export const checkpointRecordsPerAppendMax = 512;

/** How the records of an internal topic are keys and values, both ways. */
export interface InternalRecordCodec<R> {
  encode(record: R): { key: Uint8Array; value: Uint8Array | null };
  /** Throws a typed error naming what is unreadable. */
  decode(key: Uint8Array | null, value: Uint8Array | null): R;
}

/**
 * A coordinator's view of its internal topic (`__consumer_offsets`, `__transaction_state`): whether
 * this node leads each partition, and the partition's records, appended (acknowledged once every
 * in-sync replica holds them) and read back. `InternalTopic` serves it from the broker; tests serve
 * it from memory.
 */
export interface InternalLog<R> {
  /** The topic's partitions, or null while it does not exist. */
  partitionCount(): number | null;
  /** Creates the topic when it does not exist; resolves once it does. */
  ensure(): Promise<void>;
  /** This node's leader epoch of the partition while it leads it; null while another node does or none. */
  leaderEpoch(partition: number): number | null;
  /** Appends the records; resolves once every in-sync replica holds them. */
  append(partition: number, records: readonly R[]): Promise<AppendedRecords>;
  /**
   * Reads every record of the partition from its log start to its end, in order, each to `visit`.
   * Takes turns of the loop as it goes.
   */
  replay(partition: number, visit: (record: R) => void): Promise<ReplayedRecords>;
  /** Deletes the partition's sealed segments that end below `offset` (whatever was written again above it). */
  trimBelow(partition: number, offset: number): Promise<void>;
}

export interface AppendedRecords {
  /** The offset of the first record appended. */
  baseOffset: number;
  /** The keys' and values' bytes. */
  bytes: number;
}

export interface ReplayedRecords {
  /** The offset after the last record read. */
  nextOffset: number;
  /** The keys' and values' bytes read. */
  bytes: number;
}

export interface InternalTopicDeps<R> {
  catalog: Catalog;
  data: DataPlane;
  /** The Kafka stream, which holds the topic. */
  streamName: string;
  topicName: string;
  /** The partitions of the topic when it is created. */
  partitions: number;
  /** The bytes appended between two checkpoints: the topic's segments are a quarter of it (at least 1 MiB). */
  checkpointBytes: number;
  codec: InternalRecordCodec<R>;
}

/**
 * A coordinator's internal topic as a topic of the Kafka stream, served by the broker like any
 * other: records are appended as a producer's with acks all, and read back by polls. It is never
 * tiered and has no total retention: its coordinator keeps it small by checkpoints (`trimBelow`).
 */
export class InternalTopic<R> implements InternalLog<R> {
  readonly #deps: InternalTopicDeps<R>;

  constructor(deps: InternalTopicDeps<R>) {
    assert(deps.partitions >= 1, `Cannot serve ${deps.topicName}: it needs a partition`);
    this.#deps = deps;
  }

  partitionCount(): number | null {
    const topic = this.#deps.catalog.findTopic(this.#deps.streamName, this.#deps.topicName);
    return topic === null ? null : topic.slots.length;
  }

  /** The options the topic is created with. */
  options(): TopicOptions {
    const { catalog, partitions, checkpointBytes } = this.#deps;
    return {
      ...defaultTopicOptions(catalog.topicDefaults, partitions),
      segmentSizeBytes: Math.min(256 * 1024 * 1024, Math.max(1024 * 1024, Math.floor(checkpointBytes / 4))),
      tiered: false,
      localRetentionAgeMs: null,
      localRetentionSizeBytes: null,
      retentionConsumerBarrier: false,
    };
  }

  async ensure(): Promise<void> {
    const { catalog, streamName, topicName } = this.#deps;
    if (this.partitionCount() !== null) return;
    try {
      if (!catalog.streams().some((s) => s.name === streamName)) await catalog.createStream(streamName);
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
    try {
      await catalog.createTopic(streamName, topicName, this.options());
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
  }

  leaderEpoch(partition: number): number | null {
    if (this.partitionCount() === null) return null;
    try {
      const leadership = this.#deps.data.leadership(this.#deps.streamName, this.#deps.topicName, partition);
      return leadership.kind === "leader" ? leadership.leaderEpoch : null;
    } catch (error) {
      // A partition refused at boot (its reason is logged then) has no leader here: its records are refused.
      if (error instanceof UnavailableError || error instanceof ResourceNotFoundError) return null;
      throw error;
    }
  }

  async append(partition: number, records: readonly R[]): Promise<AppendedRecords> {
    const { data, streamName, topicName, codec } = this.#deps;
    assert(records.length > 0, `Cannot append to ${topicName}: no records`);
    let bytes = 0;
    const messages = records.map((record) => {
      const { key, value } = codec.encode(record);
      bytes += key.length + (value?.length ?? 0);
      return { key, headers: [], payload: value };
    });
    const result = await data.produce(streamName, topicName, partition, messages);
    return { baseOffset: result.baseOffset, bytes };
  }

  async replay(partition: number, visit: (record: R) => void): Promise<ReplayedRecords> {
    const { data, streamName, topicName, codec } = this.#deps;
    const range = data.offsetRange(streamName, topicName, partition);
    let offset = range.start;
    let bytes = 0;
    // To the log's end, past the high watermark: a new leader's followers may not have confirmed
    // its last records yet, but it never cuts its own log, so they will be committed, and a
    // coordinator that left them out would answer with a state older than it acknowledged.
    // Each read moves past at least one record, so the reads are bounded by the records.
    while (offset < range.end) {
      const read = await data.poll(streamName, topicName, partition, {
        offset,
        count: Math.min(replayRecordsPerReadMax, range.end - offset),
        maxBytes: replayBytesPerReadMax,
        toLogEnd: true,
      });
      try {
        for (const message of read.messages) {
          bytes += (message.key?.length ?? 0) + (message.payload?.length ?? 0);
          visit(codec.decode(message.key, message.payload));
        }
      } finally {
        read.release();
      }
      assert(read.nextOffset > offset, `a replay of ${topicName}/${partition} moves on from ${offset}`);
      offset = read.nextOffset;
    }
    return { nextOffset: offset, bytes };
  }

  trimBelow(partition: number, offset: number): Promise<void> {
    return this.#deps.data.deleteRecordsBelow(this.#deps.streamName, this.#deps.topicName, partition, offset);
  }
}

/** What a coordinator's request is told when its records could not be appended to its internal topic. */
export type InternalAppendRefusal = "not_coordinator" | "coordinator_not_available" | "unknown_server_error";

/**
 * The refusal of a failed append, as Kafka's coordinators map it: NOT_COORDINATOR when this node
 * stopped leading the partition (the client finds the new coordinator), COORDINATOR_NOT_AVAILABLE
 * when the partition cannot take it now (too few replicas in sync, a full queue; the client retries).
 */
export function internalAppendRefusal(error: unknown): InternalAppendRefusal {
  if (error instanceof NotLeaderError) return "not_coordinator";
  if (
    error instanceof NotEnoughReplicasError || error instanceof ReplicationTimeoutError ||
    error instanceof UnavailableError || error instanceof QueueFullError ||
    error instanceof ResourceNotFoundError
  ) {
    return "coordinator_not_available";
  }
  return "unknown_server_error";
}

/**
 * A checkpoint of a coordinator's partition, run in the partition's turn (every append queued
 * before it applied to memory): its live records are written again at the log's end, then the
 * segments wholly below the first of them are deleted. What they held is superseded or was deleted,
 * so the partition stays about the size of its live records plus the bytes between checkpoints.
 * Returns the bytes written, or 0 when there was nothing to write.
 */
export async function writeCheckpoint<R>(
  log: InternalLog<R>,
  partition: number,
  records: readonly R[],
): Promise<number> {
  if (records.length === 0) return 0;
  let baseOffset: number | null = null;
  let bytes = 0;
  for (let at = 0; at < records.length; at += checkpointRecordsPerAppendMax) {
    const appended = await log.append(partition, records.slice(at, at + checkpointRecordsPerAppendMax));
    baseOffset ??= appended.baseOffset;
    bytes += appended.bytes;
  }
  await log.trimBelow(partition, baseOffset!);
  return bytes;
}

/** Why a coordinator's request is not served here now: as Kafka's coordinators answer it. */
export type InternalRouteRefusal =
  | "not_coordinator"
  | "coordinator_load_in_progress"
  | "coordinator_not_available";

/**
 * Whether this node serves a coordinator's partition now: not while another node leads it (its
 * leader epoch here is null), while it is loading or held under an older epoch, or while its load
 * failed (until it is tried again); null when it serves it.
 */
export function ledPartitionRefusal(
  closed: boolean,
  leaderEpoch: number | null,
  held: { leaderEpoch: number; status: "loading" | "loaded" | "failed" } | undefined,
): InternalRouteRefusal | null {
  if (closed) return "coordinator_not_available";
  if (leaderEpoch === null) return "not_coordinator";
  if (held === undefined || held.leaderEpoch !== leaderEpoch || held.status === "loading") {
    return "coordinator_load_in_progress";
  }
  return held.status === "failed" ? "coordinator_not_available" : null;
}

/** Resolves once `loadSettled` does, or after `timeoutMs` on `clock`, whichever comes first. */
export async function waitForLoad(
  clock: Clock,
  loadSettled: Promise<void>,
  timeoutMs: number,
): Promise<void> {
  const timeout = new AbortController();
  // Aborted (AbortedError) just below once the load settles first: the end of a wait, no failure.
  const expired = clock.sleep(timeoutMs, timeout.signal).catch(() => {});
  await Promise.race([loadSettled, expired]);
  timeout.abort();
}
