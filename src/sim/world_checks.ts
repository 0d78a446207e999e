import { RemoteCorruptError, RemoteDataLossError } from "../log/remote/remote_reader.ts";
import { incarnationOf, type PartitionIncarnation, segmentKeys } from "../tier/bucket/object_keys.ts";
import * as inv from "./invariants.ts";
import { bucketPrefix, clusterId } from "./sim_settings.ts";
import type { World } from "./world.ts";

/** The incarnation the live partition writes its objects under. */
export function liveIncarnation(w: World): PartitionIncarnation {
  return incarnationOf(bucketPrefix, clusterId, w.process.partition);
}

/** The store key of the live incarnation's log object of a segment (a merged one's names its end too). */
export function segmentLogKey(
  w: World,
  segment: { startOffset: number; mergedEndOffset: number | null },
): string {
  return segmentKeys(liveIncarnation(w), segment.startOffset, segment.mergedEndOffset).log;
}

/** What each marker says next to the object it names; sabotaged segments are the scenario's doing. */
export function markerViews(w: World): inv.MarkerView[] {
  return w.process.partition.log.segments
    .filter((s) => s.location === "remote" && s.marker !== null && !w.sabotaged.has(s.startOffset))
    .map((s) => {
      const key = segmentLogKey(w, s);
      return {
        startOffset: s.startOffset,
        key,
        markerCrc32: s.marker!.logCrc32,
        objectCrc32: w.sim.peek(key)?.metadata["crc32"] ?? null,
      };
    });
}

/** The invariants that hold after every step: floor, eviction, markers, cache budget, stretch. */
export function check(w: World): void {
  const sb = w.process.partition.superblock;
  w.fail(inv.floorMonotone(w.floorSeen, sb.tieredUpToOffset));
  w.floorSeen = Math.max(w.floorSeen, sb.tieredUpToOffset);
  w.fail(inv.evictionSound(w.process.partition.log.segments, sb.tieredUpToOffset));
  w.fail(inv.chainGapless(w.process.partition.log.segments));
  w.fail(inv.markersBacked(markerViews(w)));
  w.fail(inv.cacheWithinBudget(w.process.cache.usedBytes, w.process.cache.budgetBytes));
  w.fail(inv.stretchBounded(w.meter.bytesMax, w.stretchBytesMax));
}

/** Missing or corrupt remote data: never acceptable, unless the scenario made it so. */
export function isDataLoss(error: unknown): error is RemoteDataLossError | RemoteCorruptError {
  return error instanceof RemoteDataLossError || error instanceof RemoteCorruptError;
}

/** A read error is the scenario's doing when it names a segment the scenario lost or corrupted. */
export function expectedLoss(w: World, error: unknown): error is RemoteDataLossError | RemoteCorruptError {
  return isDataLoss(error) && w.sabotaged.has(error.segment);
}

/**
 * The topic's options changed: the partition's log hears of it as a PATCH tells it through the
 * catalog (`updateConfig`), so its activity listeners (the sealed scan, the eviction looks) look again.
 */
export function optionsChanged(w: World): void {
  const log = w.process.partition.log;
  log.updateConfig(log.config);
}
