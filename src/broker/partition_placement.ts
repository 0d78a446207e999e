import type { PartitionAddress } from "../log/partition.ts";
import { assert } from "../runtime/assert.ts";
import { fnv1a32 } from "./stable_hash.ts";

/** The shard a partition lives on: a stable hash of its address, so it never moves between boots. */
export function shardIndexOf(address: PartitionAddress, shardCount: number): number {
  assert(shardCount >= 1, "Cannot place a partition: there are no shards");
  return fnv1a32(`${address.streamId}:${address.topicId}:${address.partitionId}`) % shardCount;
}

/** The partition a message with this key goes to: the same key always goes to the same partition. */
export function partitionOfKey(key: string | Uint8Array, partitions: number): number {
  assert(partitions >= 1, "Cannot place a message: the topic has no partitions");
  return fnv1a32(key) % partitions;
}
