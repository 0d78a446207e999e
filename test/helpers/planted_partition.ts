import type { LogConfig } from "../../src/log/log_config.ts";
import { partitionDir } from "../../src/log/partition/partition.ts";
import type { EpochStart } from "../../src/log/partition/leader_epochs.ts";
import type { RemoteMarker } from "../../src/log/remote/remote_marker.ts";
import { writeSeededPartition } from "../../src/log/partition/seeded_partition.ts";
import type { RestoredFrom } from "../../src/log/partition/superblock.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";

// A read replica's partition as the planting tests use it: partition 1/1/0 following partition
// 4/9/0 of cluster "src" (incarnation 00000000000000aa-0), segments of 10 offsets.

export const plantingConfig: LogConfig = {
  segmentSizeBytes: 1024 * 1024,
  segmentMaxAgeMs: null,
  indexIntervalBytes: 4096,
  fsync: "always",
  fsyncIntervalMs: 1000,
  writeQueueMax: 100,
};
export const replicaAddress = { streamId: 1, topicId: 1, partitionId: 0 };
export const replicaSource = {
  clusterId: "src",
  streamId: 4,
  topicId: 9,
  partitionId: 0,
  createdRevision: "00000000000000aa",
  purgeGeneration: 0,
};

/** The marker of the source's segment holding offsets `start` to `start + 9`. */
export function sourceMarker(start: number): RemoteMarker {
  return {
    startOffset: start,
    endOffset: start + 9,
    sizeBytes: 1000,
    indexSizeBytes: 8,
    startTimestampUs: start,
    endTimestampUs: start + 9,
    maxTimestampUs: start + 9,
    createdRevision: replicaSource.createdRevision,
    purgeGeneration: replicaSource.purgeGeneration,
    logCrc32: 5,
    merged: false,
  };
}

export const restoredBelow = (belowOffset: number): RestoredFrom => ({ ...replicaSource, belowOffset });

/** Writes the replica as created: the source's segments at 0 and 10, its active segment at 20. */
export async function writeCreatedReplica(
  disk: Disk,
  dataPath: string,
  epochs: EpochStart[] = [],
): Promise<void> {
  await writeSeededPartition(disk, partitionDir(dataPath, replicaAddress), {
    createdRevision: replicaSource.createdRevision,
    purgeGeneration: 0,
    tieredUpToOffset: 20,
    markers: [sourceMarker(0), sourceMarker(10)],
    epochs,
    restoredFrom: restoredBelow(20),
  });
}
