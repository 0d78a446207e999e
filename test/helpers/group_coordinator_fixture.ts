import { GroupCoordinator } from "../../src/groups/group_coordinator.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { MemoryOffsetsLog } from "./memory_internal_log.ts";

// A group coordinator over `__consumer_offsets` in memory, for the coordinator's tests: small bounds
// (4 groups, 3 offsets per group, 8 bytes of metadata), one topic "orders" of 4 partitions.

/** Lets the promises the coordinator started (a load, an append) run to their end. */
export const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

export function coordinatorOn(log: MemoryOffsetsLog, clock = new VirtualClock(), checkpointBytes = 1 << 20) {
  const coordinator = new GroupCoordinator({
    log,
    clock,
    logger: silentLogger(),
    rng: new Rng(7),
    settings: {
      group: {
        membersMax: 8,
        sessionTimeoutMinMs: 1000,
        sessionTimeoutMaxMs: 60_000,
        initialRebalanceDelayMs: 0,
      },
      groupsMax: 4,
      offsetsPerGroupMax: 3,
      offsetMetadataBytesMax: 8,
      checkpointBytes,
    },
    topicPartitions: (topic) => (topic === "orders" ? 4 : null),
  });
  return { coordinator, clock };
}

/** A coordinator whose partitions are loaded. */
export async function loaded(log = new MemoryOffsetsLog(2), checkpointBytes?: number) {
  const made = coordinatorOn(log, new VirtualClock(), checkpointBytes);
  made.coordinator.onTick(made.clock.nowMs());
  await flush();
  return { ...made, log };
}
