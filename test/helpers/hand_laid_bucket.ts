import type { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { type PartitionIncarnation, segmentKeys } from "../../src/tier/bucket/object_keys.ts";
import type { TopicManifest } from "../../src/tier/bucket/topic_manifest.ts";

// A bucket laid out by hand, as tests of what reads a bucket back (restores, read replicas) use it:
// a source cluster "5ca1ab1e" with topic kafka/orders (stream 3, topic 8) of one partition, and
// segments of 10 offsets and 100 bytes.

export const handLaidPartition = {
  prefix: "strata",
  clusterId: "5ca1ab1e",
  streamId: 3,
  topicId: 8,
  partitionId: 0,
};

/** The topic manifest of kafka/orders, one partition, tiered, with `retentionMaxAgeMs`. */
export function ordersTopicManifest(retentionMaxAgeMs: number | null = null): TopicManifest {
  return {
    version: 2,
    clusterId: handLaidPartition.clusterId,
    streamId: 3,
    streamName: "kafka",
    topicId: 8,
    topicName: "orders",
    createdAtMs: 1_700_000_000_000,
    options: {
      partitions: 1,
      segmentSizeBytes: 1024 * 1024,
      segmentMaxAgeMs: null,
      retentionMaxAgeMs,
      retentionMaxBytes: null,
      tiered: true,
      localRetentionAgeMs: null,
      localRetentionSizeBytes: null,
      retentionConsumerBarrier: true,
      timestampType: "create_time",
      maxMessageBytes: 1024 * 1024,
      replicationFactor: null,
    },
  };
}

export async function putObject(
  store: FsObjectStore,
  key: string,
  bytes: Uint8Array,
  metadata: Record<string, string> = {},
): Promise<void> {
  await store.put(key, async function* () {
    yield bytes;
  }, { sizeBytes: bytes.length, metadata, ifAbsent: false });
}

/** A segment's two objects: a .log that begins like a record batch of leader epoch 0, its metadata whole. */
export async function putSegment(
  store: FsObjectStore,
  inc: PartitionIncarnation,
  start: number,
): Promise<void> {
  const log = new Uint8Array(100);
  log[16] = 2;
  const keys = segmentKeys(inc, start, null);
  await putObject(store, keys.log, log, {
    "start-offset": String(start),
    "end-offset": String(start + 9),
    "start-timestamp": "1",
    "end-timestamp": "2",
    "max-timestamp": "2",
    "size": "100",
    "index-size": "8",
    "crc32": "77",
    "format-version": "2",
  });
  await putObject(store, keys.index, new Uint8Array(8), { "crc32": "0", "format-version": "2" });
}
