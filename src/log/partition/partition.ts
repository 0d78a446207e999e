import { assert } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { Rng } from "../../runtime/rng.ts";
import { ConsumerOffsets, consumerOffsetsFileName } from "./consumer_offsets.ts";
import type { LogConfig } from "../log_config.ts";
import { PartitionRefusedError } from "../log_errors.ts";
import { type EpochStart, LeaderEpochs, leaderEpochsFileName } from "./leader_epochs.ts";
import { PartitionLog } from "./partition_log.ts";
import { recoverSegments } from "../segment/recover_segments.ts";
import type { Segment } from "../segment/segment.ts";
import { storageFormatVersion } from "../../runtime/format_version_error.ts";
import { readSuperblock, type RestoredFrom, type Superblock, writeSuperblock } from "./superblock.ts";
import type { RemoteMarker } from "../remote/remote_marker.ts";
import type { ReplaceDecision, ReplaceRemoteSegments } from "../segment/segment_replacement.ts";
import { plantedSuperblock } from "../remote/remote_planting.ts";
import { type RetentionDecision, retentionSegmentsPerPassMax } from "../retention/total_retention.ts";
import {
  type AdvanceDeletedUpTo,
  type AdvanceTieredFloor,
  applyAdvanceTieredFloor,
  type DeletedUpToOutcome,
  type FloorOutcome,
  type FloorState,
  resetForPurge,
} from "../retention/floor_state.ts";

/**
 * Whether a purge was cut short after its unlinks: the log is gone or one empty segment at offset 0,
 * yet the superblock keeps a floor or a retention watermark above 0. No other state looks like
 * this: the floor never passes the log's end, and retention never deletes the active segment.
 */
function interruptedPurge(superblock: Superblock, segments: readonly Segment[]): boolean {
  const empty = segments.length === 0 ||
    (segments.length === 1 && segments[0]!.startOffset === 0 && segments[0]!.isEmpty);
  return empty && (superblock.tieredUpToOffset > 0 || superblock.deletedUpToOffset > 0);
}

/** The superblock a purge would have written, made durable; the consumer offsets are the caller's. */
async function finishPurge(disk: Disk, dir: string, superblock: Superblock): Promise<Superblock> {
  const next: Superblock = {
    ...superblock,
    ...resetForPurge(floorStateOf(superblock)),
    deletedUpToOffset: 0,
    restoredFrom: null,
  };
  await writeSuperblock(disk, dir, next);
  return next;
}

/** Where a partition sits, by id; names live only in the metadata. */
export interface PartitionAddress {
  streamId: number;
  topicId: number;
  partitionId: number;
}

export const consumersPerPartitionMax = 1024;

/** The directory of a partition under the data directory; built from ids only. */
export function partitionDir(dataPath: string, a: PartitionAddress): string {
  return `${dataPath}/streams/${a.streamId}/topics/${a.topicId}/partitions/${a.partitionId}`;
}

/** A partition: its log, its superblock and its consumer offsets. */
export class Partition {
  readonly address: PartitionAddress;
  readonly dir: string;
  readonly log: PartitionLog;
  readonly offsets: ConsumerOffsets;
  readonly #disk: Disk;
  #superblock: Superblock;
  /** The superblock's writes, one at a time: each change reads the state the one before it left. */
  #superblockWrites: Promise<unknown> = Promise.resolve();

  private constructor(
    disk: Disk,
    address: PartitionAddress,
    dir: string,
    log: PartitionLog,
    offsets: ConsumerOffsets,
    superblock: Superblock,
  ) {
    this.#disk = disk;
    this.address = address;
    this.dir = dir;
    this.log = log;
    this.offsets = offsets;
    this.#superblock = superblock;
  }

  get superblock(): Readonly<Superblock> {
    return this.#superblock;
  }

  /**
   * Creates a new partition's directory, superblock and first segment, durably; `revision` is its
   * created revision (16 hex digits), or the generator a random one is drawn from.
   */
  static async create(
    disk: Disk,
    clock: Clock,
    revision: Rng | string,
    dataPath: string,
    address: PartitionAddress,
    config: LogConfig,
    restored: RestoredFrom | null = null,
  ): Promise<Partition> {
    assert(
      typeof revision !== "string" || /^[0-9a-f]{16}$/.test(revision),
      `Bad created revision ${revision}`,
    );
    const dir = partitionDir(dataPath, address);
    await disk.mkdirp(dir);
    const superblock: Superblock = {
      version: storageFormatVersion,
      // Given (a cluster's replicas share one), or random, not a counter: unique even if a wiped
      // data directory reuses the same ids.
      createdRevision: typeof revision === "string" ? revision : revision.hex64(),
      // A restored partition created empty (it copies its leader's log) keeps its source's keys.
      purgeGeneration: restored?.purgeGeneration ?? 0,
      tieredUpToOffset: 0,
      deletedUpToOffset: 0,
      restoredFrom: restored,
    };
    await writeSuperblock(disk, dir, superblock);
    const segment = await PartitionLog.createSegment(disk, dir, 0);
    const log = new PartitionLog(
      disk,
      dir,
      clock,
      config,
      [segment],
      labelOf(address),
      LeaderEpochs.empty(disk, dir),
    );
    const offsets = await ConsumerOffsets.load(disk, dir, consumersPerPartitionMax);
    return new Partition(disk, address, dir, log, offsets, superblock);
  }

  /** Opens an existing partition, recovering its log; throws `PartitionRefusedError` when it cannot. */
  static async open(
    disk: Disk,
    clock: Clock,
    dataPath: string,
    address: PartitionAddress,
    config: LogConfig,
    logger: Logger,
  ): Promise<Partition> {
    const dir = partitionDir(dataPath, address);
    const label = labelOf(address);
    const superblock = await readSuperblock(disk, dir).catch((error: Error) => {
      throw new PartitionRefusedError(label, error.message, { cause: error });
    });
    if (superblock === null) throw new PartitionRefusedError(label, "its superblock is missing");
    const report = await recoverSegments(disk, dir, config.indexIntervalBytes, label, logger, {
      createdRevision: superblock.createdRevision,
      purgeGeneration: superblock.purgeGeneration,
    });
    let booted = superblock;
    if (interruptedPurge(superblock, report.segments)) {
      // A purge unlinks every segment, starts an empty log at offset 0 and only then writes the new
      // generation's superblock. A crash in between leaves the old generation and its floor over an
      // empty log: finishing the purge keeps that floor from passing offsets of the new log.
      booted = await finishPurge(disk, dir, superblock);
      logger.info("partition purge finished at boot", {
        partition: label,
        purge_generation: booted.purgeGeneration,
      });
    }
    if (report.segments.length === 0) report.segments.push(await PartitionLog.createSegment(disk, dir, 0));
    if (report.truncatedBytes > 0 || report.rebuiltIndexes > 0) {
      logger.info("partition recovered", {
        partition: label,
        truncated_bytes: report.truncatedBytes,
        rebuilt_indexes: report.rebuiltIndexes,
      });
    }
    const logEnd = report.segments.at(-1)!.endOffset + 1;
    const epochs = await LeaderEpochs.load(disk, dir, logEnd, report.names.includes(leaderEpochsFileName));
    const log = new PartitionLog(
      disk,
      dir,
      clock,
      config,
      report.segments,
      label,
      epochs,
      report.table,
      report.producers,
    );
    const stored = report.names.includes(consumerOffsetsFileName);
    const offsets = await ConsumerOffsets.load(disk, dir, consumersPerPartitionMax, stored);
    if (booted !== superblock) await offsets.clear();
    return new Partition(disk, address, dir, log, offsets, booted);
  }

  /** Deletes every message: a new purge generation, an empty log at offset 0, no consumer offsets. */
  async purge(): Promise<void> {
    await this.log.purge(() =>
      this.#changeSuperblock((current) => {
        const next = {
          ...current,
          ...resetForPurge(floorStateOf(current)),
          deletedUpToOffset: 0,
          restoredFrom: null,
        };
        return { next, result: undefined };
      })
    );
    await this.offsets.clear();
  }

  /**
   * Takes `revision` as the partition's created revision, provided nothing of it was ever tiered (no
   * floor, no segment in the store): the objects' keys are built from it, so it can change only
   * while no object has one. Resolves true when the partition has that revision now.
   */
  adoptCreatedRevision(revision: string): Promise<boolean> {
    assert(/^[0-9a-f]{16}$/.test(revision), `Bad created revision ${revision}`);
    return this.#changeSuperblock((current) => {
      if (current.createdRevision === revision) return { next: null, result: true };
      const tiered = current.tieredUpToOffset > 0 || this.log.segments.some((s) => s.location !== "local");
      return tiered
        ? { next: null, result: false }
        : { next: { ...current, createdRevision: revision }, result: true };
    });
  }

  /**
   * Plants a read replica's new segments (`plantRemoteSegments`) and raises the floor to where
   * they end. The replica takes its source's incarnation (`source`) if it has another, which only
   * an empty one created before the source had any object can have.
   */
  async plantRemote(
    markers: readonly RemoteMarker[],
    epochs: readonly EpochStart[],
    source: Omit<RestoredFrom, "belowOffset">,
  ): Promise<void> {
    const end = markers.at(-1)!.endOffset + 1;
    // Raised before the chain changes: a read of a new segment finds the source's keys at once. A
    // crash before the markers are whole leaves a floor that boot brings back to them.
    await this.#changeSuperblock((current) => {
      const { createdRevision, purgeGeneration } = source;
      const start = this.log.segments[0]!;
      assert(
        (current.createdRevision === createdRevision && current.purgeGeneration === purgeGeneration) ||
          (this.log.segments.length === 1 && start.isEmpty && current.tieredUpToOffset === 0),
        `Cannot plant segments of ${createdRevision}-${purgeGeneration} in ${this.log.label}: it holds others`,
      );
      const adopted = {
        ...current,
        createdRevision,
        purgeGeneration,
        restoredFrom: { ...source, belowOffset: end },
      };
      return { next: plantedSuperblock(adopted, end), result: undefined };
    });
    await this.log.plantRemote(markers, epochs);
  }

  /**
   * Applies a committed replace of remote segments (a merge): rejected when it is of another purge
   * generation (the partition was purged since), put off while it reaches the floor (a follower whose
   * floor is behind its leader's), and otherwise as the chain decides (`decideReplace`).
   */
  async replaceRemote(command: ReplaceRemoteSegments): Promise<ReplaceDecision> {
    const sb = this.#superblock;
    if (command.purgeGeneration !== sb.purgeGeneration) {
      return { kind: "rejected", reason: `it is of purge generation ${command.purgeGeneration}` };
    }
    const end = command.markers.at(-1)!.endOffset;
    if (end >= sb.tieredUpToOffset) {
      return { kind: "wait", reason: `it reaches ${end}, at or past the floor ${sb.tieredUpToOffset}` };
    }
    const identity = { createdRevision: sb.createdRevision, purgeGeneration: sb.purgeGeneration };
    return await this.log.replaceRemote(command.markers, identity);
  }

  /**
   * Applies a control-log command to this partition's floor state machine, checked against the
   * committed end of its log (its high watermark: a replica's records above it may yet be cut, and
   * must never be evicted in favour of another leader's objects), and persists the floor in the
   * superblock when it advances.
   */
  applyFloor(command: AdvanceTieredFloor): Promise<FloorOutcome> {
    return this.#changeSuperblock((current) => {
      const committedEnd = this.log.highWatermark;
      const { state, outcome } = applyAdvanceTieredFloor(floorStateOf(current), command, committedEnd);
      const next = outcome === "advanced" ? { ...current, tieredUpToOffset: state.tieredUpToOffset } : null;
      return { next, result: outcome };
    });
  }

  /**
   * Deletes every segment that ends below the committed watermark `command.upToOffset` (at most
   * a pass of segments at a time, as many passes as the chain needs; the active segment never).
   */
  async applyDeletedUpTo(command: AdvanceDeletedUpTo): Promise<DeletedUpToOutcome> {
    const sb = this.#superblock;
    if (command.purgeGeneration !== sb.purgeGeneration) return "rejected_generation";
    if (command.upToOffset <= sb.deletedUpToOffset) return "unchanged";
    const passesMax = Math.ceil(this.log.segments.length / retentionSegmentsPerPassMax) + 1;
    for (let pass = 0; pass < passesMax; pass++) {
      if (await this.enforceRetention((s) => s.endOffset < command.upToOffset) === 0) break;
    }
    return this.#superblock.deletedUpToOffset > sb.deletedUpToOffset ? "advanced" : "unchanged";
  }

  /**
   * Total retention over local and remote segments; when it deletes, the durable
   * `deletedUpToOffset` watermark rises to the new first offset.
   */
  async enforceRetention(decide: RetentionDecision): Promise<number> {
    const deleted = await this.log.enforceRetention(decide);
    return await this.#changeSuperblock((current) => {
      const first = this.log.stats().firstOffset;
      const next = deleted > 0 && first > current.deletedUpToOffset
        ? { ...current, deletedUpToOffset: first }
        : null;
      return { next, result: deleted };
    });
  }

  /**
   * Runs `change` on the superblock as the writes before it left it, and makes what it returns
   * (when not null) durable before the next change runs. The floor, the retention watermark and a
   * purge each write the whole superblock, from their own tasks: one at a time, none is lost, and
   * no two share the temporary file.
   */
  #changeSuperblock<T>(change: (current: Superblock) => { next: Superblock | null; result: T }): Promise<T> {
    // The chain goes on after a failed change: that change's caller heard of its failure.
    const changed = this.#superblockWrites.catch(() => {}).then(async () => {
      const { next, result } = change(this.#superblock);
      if (next !== null) {
        await writeSuperblock(this.#disk, this.dir, next);
        this.#superblock = next;
      }
      return result;
    });
    this.#superblockWrites = changed;
    return changed;
  }

  close(): Promise<void> {
    return this.log.close();
  }
}

export function labelOf(a: PartitionAddress): string {
  return `${a.streamId}/${a.topicId}/${a.partitionId}`;
}

function floorStateOf(superblock: Superblock): FloorState {
  return { purgeGeneration: superblock.purgeGeneration, tieredUpToOffset: superblock.tieredUpToOffset };
}
