import { AlreadyExistsError, ResourceNotFoundError, UnavailableError } from "../../broker/broker_errors.ts";
import type { Catalog } from "../../broker/catalog/catalog.ts";
import type { DataPlane } from "../../broker/data_plane.ts";
import { defaultTopicOptions, type TopicOptions } from "../../broker/catalog/topic_options.ts";
import { assert } from "../../runtime/assert.ts";
import {
  type AppendedRecords,
  type OffsetsLog,
  offsetsTopicName,
  type ReplayedRecords,
} from "./offsets_log.ts";
import { decodeOffsetsRecord, encodeOffsetsRecord, type OffsetsRecord } from "./offsets_records.ts";

/** Records one replay read takes at most: its poll decodes them in pieces, on the loop's turns. */
const replayRecordsPerReadMax = 1024;
/** Bytes one replay read takes at most. */
const replayBytesPerReadMax = 1024 * 1024;

export interface OffsetsTopicDeps {
  catalog: Catalog;
  data: DataPlane;
  /** The Kafka stream, which holds the topic. */
  streamName: string;
  /** `[groups] offsets_topic_partitions`: the partitions of the topic when it is created. */
  partitions: number;
  /** `[groups] offsets_checkpoint_bytes`: the topic's segments are a quarter of it (at least 1 MiB). */
  checkpointBytes: number;
}

/**
 * `__consumer_offsets` as a topic of the Kafka stream, served by the broker like any other: records
 * are appended as a producer's with acks all, and read back by polls. It is never tiered and has no
 * total retention: its group coordinators keep it small by checkpoints (`trimBelow`).
 */
export class OffsetsTopic implements OffsetsLog {
  readonly #deps: OffsetsTopicDeps;

  constructor(deps: OffsetsTopicDeps) {
    assert(deps.partitions >= 1, "Cannot serve the offsets topic: it needs a partition");
    this.#deps = deps;
  }

  partitionCount(): number | null {
    const topic = this.#deps.catalog.findTopic(this.#deps.streamName, offsetsTopicName);
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
    const { catalog, streamName } = this.#deps;
    if (this.partitionCount() !== null) return;
    try {
      if (!catalog.streams().some((s) => s.name === streamName)) await catalog.createStream(streamName);
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
    try {
      await catalog.createTopic(streamName, offsetsTopicName, this.options());
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
  }

  leaderEpoch(partition: number): number | null {
    if (this.partitionCount() === null) return null;
    try {
      const leadership = this.#deps.data.leadership(this.#deps.streamName, offsetsTopicName, partition);
      return leadership.kind === "leader" ? leadership.leaderEpoch : null;
    } catch (error) {
      // A partition refused at boot (its reason is logged then) has no leader here: its groups are refused.
      if (error instanceof UnavailableError || error instanceof ResourceNotFoundError) return null;
      throw error;
    }
  }

  async append(partition: number, records: readonly OffsetsRecord[]): Promise<AppendedRecords> {
    assert(records.length > 0, "Cannot append to the offsets topic: no records");
    let bytes = 0;
    const messages = records.map((record) => {
      const { key, value } = encodeOffsetsRecord(record);
      bytes += key.length + (value?.length ?? 0);
      return { key, headers: [], payload: value };
    });
    const result = await this.#deps.data.produce(
      this.#deps.streamName,
      offsetsTopicName,
      partition,
      messages,
    );
    return { baseOffset: result.baseOffset, bytes };
  }

  async replay(partition: number, visit: (record: OffsetsRecord) => void): Promise<ReplayedRecords> {
    const { data, streamName } = this.#deps;
    const range = data.offsetRange(streamName, offsetsTopicName, partition);
    let offset = range.start;
    let bytes = 0;
    // To the log's end, past the high watermark: a new leader's followers may not have confirmed
    // its last records yet, but it never cuts its own log, so they will be committed, and a
    // coordinator that left them out would answer with offsets older than it acknowledged.
    // Each read moves past at least one record, so the reads are bounded by the records.
    while (offset < range.end) {
      const read = await data.poll(streamName, offsetsTopicName, partition, {
        offset,
        count: Math.min(replayRecordsPerReadMax, range.end - offset),
        maxBytes: replayBytesPerReadMax,
        toLogEnd: true,
      });
      try {
        for (const message of read.messages) {
          bytes += (message.key?.length ?? 0) + (message.payload?.length ?? 0);
          visit(decodeOffsetsRecord(message.key, message.payload));
        }
      } finally {
        read.release();
      }
      assert(
        read.nextOffset > offset,
        `a replay of ${offsetsTopicName}/${partition} moves on from ${offset}`,
      );
      offset = read.nextOffset;
    }
    return { nextOffset: offset, bytes };
  }

  trimBelow(partition: number, offset: number): Promise<void> {
    return this.#deps.data.deleteRecordsBelow(this.#deps.streamName, offsetsTopicName, partition, offset);
  }
}
