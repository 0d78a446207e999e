import type { Catalog } from "../broker/catalog/catalog.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import type { ShardRuntime } from "../broker/shards/shard_runtime.ts";
import type { Config } from "../config/config.ts";
import { GroupCoordinator } from "../groups/group_coordinator.ts";
import { minimumCommitted } from "../groups/core/group_offsets.ts";
import { offsetsTopic } from "../groups/offsets/offsets_topic.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Rng } from "../runtime/rng.ts";

export interface GroupsDeps {
  config: Config;
  catalog: Catalog;
  data: DataPlane;
  shards: readonly ShardRuntime[];
  clock: Clock;
  rng: Rng;
  logger: Logger;
}

/**
 * The consumer groups of the Kafka stream: `__consumer_offsets` over the broker, and the group
 * coordinator driven from shard 0's tick, whose committed offsets every shard's total retention
 * keeps for the consumer barrier. The topic is created when a group first needs it (the first
 * FindCoordinator for a group), as Kafka creates it.
 */
export function openGroups(deps: GroupsDeps): GroupCoordinator {
  const { config, catalog, data, clock, logger } = deps;
  const groups = config.groups;
  const streamName = config.kafka.stream;
  const log = offsetsTopic({
    catalog,
    data,
    streamName,
    partitions: groups.offsetsTopicPartitions,
    checkpointBytes: groups.offsetsCheckpointBytes,
  });
  const coordinator = new GroupCoordinator({
    log,
    clock,
    logger,
    rng: deps.rng,
    settings: {
      group: {
        membersMax: groups.groupMembersMax,
        sessionTimeoutMinMs: groups.sessionTimeoutMinMs,
        sessionTimeoutMaxMs: groups.sessionTimeoutMaxMs,
        initialRebalanceDelayMs: groups.initialRebalanceDelayMs,
      },
      groupsMax: groups.groupsMax,
      offsetsPerGroupMax: groups.offsetsPerGroupMax,
      offsetMetadataBytesMax: groups.offsetMetadataBytesMax,
      checkpointBytes: groups.offsetsCheckpointBytes,
    },
    topicPartitions: (topic) => catalog.findTopic(streamName, topic)?.slots.length ?? null,
  });
  deps.shards[0]!.pump.onTick("groups", (nowMs) => coordinator.onTick(nowMs));
  for (const shard of deps.shards) {
    shard.consumerBarrier = (streamId, topicName, partitionId) => {
      const stream = catalog.streams().find((s) => s.id === streamId);
      return stream?.name === streamName ? minimumCommitted(coordinator, topicName, partitionId) : null;
    };
  }
  return coordinator;
}
