import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { storageFormatVersion } from "../../runtime/format_version_error.ts";
import { writeWholeFile } from "../../runtime/disk/file_ops.ts";
import { type EpochStart, epochStartsMax, LeaderEpochs } from "./leader_epochs.ts";
import type { PartitionAddress } from "./partition.ts";
import type { RemoteMarker } from "../remote/remote_marker.ts";
import { RemoteTable } from "../remote/remote_table.ts";
import { segmentStem } from "../segment/segment.ts";
import { type ProducerSnapshot, writeProducerSnapshot } from "../producers/producer_snapshots.ts";
import { type RestoredFrom, type Superblock, writeSuperblock } from "./superblock.ts";

/**
 * What a new replica of a tiered partition starts from instead of an empty log: the tiered part
 * of the chain as markers (read from the bucket's object metadata), the leader epochs those
 * segments were written under, and the committed floor. The replica then fetches only what lies
 * at and above the floor from its leader (docs/DESIGN.md, "Tiering across replicas").
 */
export interface PartitionSeed {
  createdRevision: string;
  purgeGeneration: number;
  /** The committed floor, exclusive: the first offset the replica fetches from its leader. */
  tieredUpToOffset: number;
  /** The tiered segments, oldest first, with no gap, the last ending at `tieredUpToOffset - 1`. */
  markers: RemoteMarker[];
  /** The epochs the tiered segments were written under, oldest first. */
  epochs: EpochStart[];
  /** A restore's seed: the incarnation whose objects the markers name (their keys are its). */
  restoredFrom?: RestoredFrom;
  /**
   * The idempotent producers' state at the floor, from the last segment's snapshot in the bucket
   * (taken at `tieredUpToOffset`); null or absent when that segment has none.
   */
  producers?: ProducerSnapshot | null;
}

/**
 * Finds the seed of a partition a node is about to create, or null when it has nothing tiered. A
 * restored partition (`restored`: its source incarnation and where the restore's chain ends) always
 * has one: the source's chain, and its own above it once the cluster has uploaded some.
 */
export interface PartitionSeeder {
  seedFor(
    address: PartitionAddress,
    createdRevision: string,
    restored?: RestoredChain | null,
  ): Promise<PartitionSeed | null>;
}

/** The chain a restore took of a source partition: `[fromOffset, source.belowOffset)` of `source`. */
export interface RestoredChain {
  source: RestoredFrom;
  /** Where the restored chain starts: its segments from here on are the ones every replica takes. */
  fromOffset: number;
}

/** Checks a seed's shape: a contiguous chain of one incarnation ending just below its floor. */
export function assertSeed(seed: PartitionSeed): void {
  assert(seed.markers.length > 0, "Cannot seed a partition: no tiered segment");
  assert(seed.epochs.length <= epochStartsMax, `Cannot seed a partition: ${seed.epochs.length} epochs`);
  for (const [i, m] of seed.markers.entries()) {
    assert(
      m.createdRevision === seed.createdRevision && m.purgeGeneration === seed.purgeGeneration,
      `Cannot seed a partition: marker ${m.startOffset} is of another incarnation`,
    );
    assert(m.startOffset <= m.endOffset, `Cannot seed a partition: segment ${m.startOffset} is empty`);
    const previous = seed.markers[i - 1];
    assert(
      previous === undefined || previous.endOffset + 1 === m.startOffset,
      `Cannot seed a partition: a hole before segment ${m.startOffset}`,
    );
  }
  assert(
    seed.markers.at(-1)!.endOffset + 1 === seed.tieredUpToOffset,
    `Cannot seed a partition: its segments end at ${
      seed.markers.at(-1)!.endOffset
    }, not below ${seed.tieredUpToOffset}`,
  );
  assert(
    seed.producers == null || seed.producers.offset === seed.tieredUpToOffset,
    `Cannot seed a partition: its producer snapshot is at ${seed.producers?.offset}, not ${seed.tieredUpToOffset}`,
  );
}

/**
 * Writes a seeded partition into `dir`, which is emptied first (a directory without a superblock
 * holds no partition: at most a seeding a crash cut short). Markers, the empty active segment at
 * the floor and the leader epochs go first; the superblock, which makes the directory a
 * partition, goes last, so that a crash leaves either a whole seeded partition or none.
 */
export async function writeSeededPartition(disk: Disk, dir: string, seed: PartitionSeed): Promise<void> {
  assertSeed(seed);
  await disk.removeTree(dir);
  await disk.mkdirp(dir);
  await new RemoteTable(disk, dir, 0, 0).rewrite(seed.markers);
  await writeWholeFile(disk, `${dir}/${segmentStem(seed.tieredUpToOffset)}.log`, new Uint8Array(0));
  const epochs = LeaderEpochs.empty(disk, dir);
  for (const e of seed.epochs) epochs.assign(e.epoch, e.startOffset);
  await epochs.persist();
  if (seed.producers != null) await writeProducerSnapshot(disk, dir, seed.producers);
  await disk.fsyncDir(dir);
  const superblock: Superblock = {
    version: storageFormatVersion,
    createdRevision: seed.createdRevision,
    purgeGeneration: seed.purgeGeneration,
    tieredUpToOffset: seed.tieredUpToOffset,
    deletedUpToOffset: seed.markers[0]!.startOffset,
    restoredFrom: seed.restoredFrom ?? null,
  };
  await writeSuperblock(disk, dir, superblock);
}
