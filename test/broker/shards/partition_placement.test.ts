import t from "tap";
import { partitionOfKey, shardIndexOf } from "../../../src/broker/shards/shard_runtime.ts";

// Placement is part of the on-disk contract: a partition's shard and a key's partition must come
// out the same on every boot and every version, so these values are pinned.
t.test("a partition's shard is a stable hash of its address", (t) => {
  const cases: [number, number, number, number, number][] = [
    // stream, topic, partition, shard of 4, shard of 3
    [1, 1, 0, 3, 2],
    [1, 1, 1, 0, 0],
    [1, 1, 2, 1, 0],
    [2, 5, 7, 3, 1],
    [10, 3, 1023, 1, 0],
  ];
  for (const [streamId, topicId, partitionId, of4, of3] of cases) {
    const address = { streamId, topicId, partitionId };
    t.equal(shardIndexOf(address, 4), of4, `${streamId}/${topicId}/${partitionId} of 4 shards`);
    t.equal(shardIndexOf(address, 3), of3, `${streamId}/${topicId}/${partitionId} of 3 shards`);
    t.equal(shardIndexOf(address, 1), 0);
  }
  t.throws(() => shardIndexOf({ streamId: 1, topicId: 1, partitionId: 0 }, 0), /no shards/);
  t.end();
});

t.test("a key's partition is a stable hash of the key", (t) => {
  const cases: [string, number, number][] = [["a", 4, 300], ["user-42", 3, 939], ["", 5, 453], [
    "ключ",
    1,
    481,
  ]];
  for (const [key, of8, of1024] of cases) {
    t.equal(partitionOfKey(key, 8), of8, `${JSON.stringify(key)} of 8 partitions`);
    t.equal(partitionOfKey(key, 1024), of1024, `${JSON.stringify(key)} of 1024 partitions`);
  }
  t.end();
});
