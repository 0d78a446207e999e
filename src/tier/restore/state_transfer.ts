import { labelOf, type PartitionAddress } from "../../log/partition/partition.ts";
import type { PartitionSeed, PartitionSeeder, RestoredChain } from "../../log/partition/seeded_partition.ts";
import { concurrently } from "../../runtime/cooperation/concurrently.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { DeadlineObjectStore } from "../../objectstore/retrying_object_store.ts";
import { incarnationPrefix, parseObjectKey, type PartitionIncarnation } from "../bucket/object_keys.ts";
import { readChainEpochs } from "./chain_epochs.ts";
import { producersAtEndOf } from "../bucket/producer_snapshot_object.ts";
import {
  chainBelowFloor,
  type ListedStem,
  markerOfObject,
  StateTransferError,
  type TieredObject,
  tieredObjectOf,
} from "./transfer_chain.ts";
import { assert } from "../../runtime/assert.ts";

/** Tiered segments one transfer takes at most; a longer chain refuses (the replica copies instead). */
export const transferSegmentsMax = 65_536;
/** HEADs and epoch reads in flight at once during one transfer. */
export const transferRequestsInFlightMax = 8;

/** A partition's committed floor, as the cluster's control log holds it. */
export interface CommittedFloor {
  purgeGeneration: number;
  upToOffset: number;
  /** Exclusive: total retention deleted every offset below it. */
  deletedUpToOffset: number;
}

export interface StateTransferDeps {
  store: DeadlineObjectStore;
  prefix: string;
  clusterId: string;
  /** The partition's committed floor, read now; null when none was ever committed. */
  committedFloor(label: string): Promise<CommittedFloor | null>;
  logger: Logger;
  /** Hears each transfer's size: segments planted and their bytes, none of them copied. */
  transferred?(segments: number, bytes: number): void;
}

/**
 * State transfer from the bucket (docs/DESIGN.md, "Tiering across replicas"): a replica about to create a
 * tiered partition that already has a committed floor takes the tiered part of the chain from the
 * bucket's object metadata (bounds, sizes, timestamps, checksums), and the leader epochs from the
 * headers of the segments' first batches, instead of copying those bytes from a peer. Each segment
 * holds batches of one leader epoch (the log rolls before a new epoch's first batch), and epochs
 * only rise along the log, so a bisection finds where they change with a few small reads.
 */
export class BucketStateTransfer implements PartitionSeeder {
  readonly #deps: StateTransferDeps;

  constructor(deps: StateTransferDeps) {
    this.#deps = deps;
  }

  async seedFor(
    address: PartitionAddress,
    createdRevision: string,
    restored: RestoredChain | null = null,
  ): Promise<PartitionSeed | null> {
    const label = labelOf(address);
    const floor = await this.#deps.committedFloor(label);
    const own = (purgeGeneration: number): PartitionIncarnation => ({
      prefix: this.#deps.prefix,
      clusterId: this.#deps.clusterId,
      ...address,
      createdRevision,
      purgeGeneration,
    });
    if (restored !== null) {
      return await this.#restoredSeed(label, own(restored.source.purgeGeneration), floor, restored);
    }
    if (floor === null || floor.upToOffset === 0) return null;
    // Objects below the deleted watermark wait for the leader's housekeeping to delete them.
    const chain = await this.#chainOf(own(floor.purgeGeneration), floor.upToOffset, floor.deletedUpToOffset);
    return await this.#seedOf(label, { createdRevision, purgeGeneration: floor.purgeGeneration }, chain);
  }

  /**
   * A restored partition's seed (docs/DESIGN.md, "Restore"): the source's chain below where the
   * restore's ends, then the partition's own from there to the committed floor, both from their
   * deleted watermark on.
   */
  async #restoredSeed(
    label: string,
    own: PartitionIncarnation,
    floor: CommittedFloor | null,
    restored: RestoredChain,
  ): Promise<PartitionSeed> {
    const { source, fromOffset } = restored;
    assert(
      own.createdRevision === source.createdRevision,
      "a restored partition takes its source's revision",
    );
    const committed = floor !== null && floor.purgeGeneration === source.purgeGeneration ? floor : null;
    const deletedUpTo = committed?.deletedUpToOffset ?? 0;
    const ownChain = committed !== null && committed.upToOffset > source.belowOffset
      ? await this.#chainOf(own, committed.upToOffset, Math.max(deletedUpTo, source.belowOffset))
      : [];
    // Exactly the restore's chain, from where it started: every replica seeds the same segments.
    const sourceChain = deletedUpTo >= source.belowOffset ? [] : await this.#chainOf(
      { prefix: this.#deps.prefix, ...source },
      source.belowOffset,
      Math.max(deletedUpTo, fromOffset),
    );
    const sourceStart = sourceChain[0]?.startOffset;
    if (sourceStart !== undefined && sourceStart !== Math.max(deletedUpTo, fromOffset)) {
      throw new StateTransferError(`the restored segments start at ${sourceStart}, not at ${fromOffset}`);
    }
    const ownStart = ownChain[0]?.startOffset;
    if (ownStart !== undefined && ownStart !== Math.max(deletedUpTo, source.belowOffset)) {
      throw new StateTransferError(`its own segments start at ${ownStart}, not where the restored ones end`);
    }
    const identity = { createdRevision: source.createdRevision, purgeGeneration: source.purgeGeneration };
    return { ...await this.#seedOf(label, identity, [...sourceChain, ...ownChain]), restoredFrom: source };
  }

  /** The chain of `incarnation`'s objects that ends just below `floor`, from `fromOffset` on. */
  async #chainOf(
    incarnation: PartitionIncarnation,
    floor: number,
    fromOffset: number,
  ): Promise<TieredObject[]> {
    const starts = (await this.#logObjectsBelow(incarnation, floor)).filter((o) =>
      o.startOffset >= fromOffset
    );
    const objects = await concurrently(starts.length, transferRequestsInFlightMax, async (i) => {
      const { key, ...stem } = starts[i]!;
      return tieredObjectOf(key, stem, await this.#deps.store.head(key));
    });
    return chainBelowFloor(objects, floor);
  }

  async #seedOf(
    label: string,
    identity: { createdRevision: string; purgeGeneration: number },
    chain: TieredObject[],
  ): Promise<PartitionSeed> {
    if (chain.length === 0) throw new StateTransferError("the bucket holds no segment of it");
    const epochs = await readChainEpochs(this.#deps.store, chain);
    const bytes = chain.reduce((n, o) => n + o.sizeBytes, 0);
    const tieredUpToOffset = chain.at(-1)!.endOffset + 1;
    this.#deps.transferred?.(chain.length, bytes);
    this.#deps.logger.info("partition state transferred from the bucket", {
      partition: label,
      tiered_up_to_offset: tieredUpToOffset,
      first_offset: chain[0]!.startOffset,
      segments: chain.length,
      tiered_bytes: bytes,
      epochs: epochs.length,
    });
    const last = chain.at(-1)!;
    const producers = await producersAtEndOf(this.#deps.store, last.key, last.endOffset, (reason) => {
      this.#deps.logger.warn(
        "state transfer: the producer snapshot is not usable; the replica starts without",
        {
          partition: label,
          reason,
        },
      );
    });
    return {
      ...identity,
      tieredUpToOffset,
      markers: chain.map((o) => markerOfObject(o, identity)),
      epochs,
      producers,
    };
  }

  /** The `.log` objects of the incarnation that start below the floor, by start offset. */
  async #logObjectsBelow(
    incarnation: PartitionIncarnation,
    floor: number,
  ): Promise<({ key: string } & ListedStem)[]> {
    const prefix = incarnationPrefix(incarnation);
    const root = `${incarnation.prefix}/${incarnation.clusterId}/`;
    const found: ({ key: string } & ListedStem)[] = [];
    let after: string | undefined = undefined;
    // Each segment lists two keys (.log and .index), a page holds up to 1000.
    const pagesMax = Math.ceil((2 * transferSegmentsMax) / 1000) + 1;
    for (let page = 0; page < pagesMax; page++) {
      const listed = await this.#deps.store.list(prefix, after === undefined ? {} : { startAfter: after });
      for (const o of listed.objects) {
        const parsed = parseObjectKey(root, o.key);
        if (parsed.kind !== "segment" || parsed.file !== "log") continue;
        if (parsed.startOffset >= floor) return found;
        found.push({ key: o.key, startOffset: parsed.startOffset, mergedEndOffset: parsed.mergedEndOffset });
        if (found.length > transferSegmentsMax) {
          throw new StateTransferError(`more than ${transferSegmentsMax} tiered segments`);
        }
      }
      if (listed.nextStartAfter === null) return found;
      after = listed.nextStartAfter;
    }
    throw new StateTransferError(`the listing of ${prefix} did not end within ${pagesMax} pages`);
  }
}
