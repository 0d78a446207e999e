import type { Partition, PartitionAddress } from "../log/partition.ts";
import { assert } from "../runtime/assert.ts";
import type { Pump } from "../runtime/pump.ts";
import type { PartitionHost } from "./catalog.ts";
import { shardIndexOf } from "./partition_placement.ts";
import { runEach, throwFailures } from "./run_each.ts";
import type { HostedTopic } from "./hosted_topic.ts";
import type { ShardRuntime } from "./shard_runtime.ts";

/** The process's shards, each partition placed on one of them by a stable hash of its address. */
export class ShardSet implements PartitionHost {
  readonly shards: readonly ShardRuntime[];

  constructor(shards: readonly ShardRuntime[]) {
    assert(shards.length >= 1, "Cannot run a broker without shards");
    assert(shards.every((s, i) => s.id === i), "Cannot place partitions: shard ids must be 0 to n-1");
    this.shards = shards;
  }

  get pumps(): Pump[] {
    return this.shards.map((s) => s.pump);
  }

  shardOf(address: PartitionAddress): ShardRuntime {
    return this.shards[shardIndexOf(address, this.shards.length)]!;
  }

  host(partition: Partition, topic: HostedTopic): void {
    this.shardOf(partition.address).host(partition, topic);
  }

  release(partition: Partition): void {
    this.shardOf(partition.address).release(partition);
  }

  purged(partition: Partition): void {
    this.shardOf(partition.address).purged(partition);
  }

  startPumps(): void {
    for (const shard of this.shards) shard.pump.start();
  }

  /**
   * Stops every pump, then housekeeping, then closes the control logs and the caches, each step
   * on every shard before the next, and every step on every shard even when one fails (the
   * failures are thrown at the end); the partitions are the catalog's to close after this.
   */
  async close(): Promise<void> {
    for (const shard of this.shards) shard.stopPump();
    const failures = [
      ...await runEach(this.shards, (shard) => shard.stopHousekeeping()),
      ...await runEach(this.shards, (shard) => shard.closeControlLog()),
      ...await runEach(this.shards, (shard) => shard.closeCache()),
    ];
    throwFailures("close the shards", failures);
  }
}
