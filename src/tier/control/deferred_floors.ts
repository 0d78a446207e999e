import type { AdvanceTieredFloor } from "../../log/retention/floor_state.ts";
import type { TieredPartition } from "../tier_service.ts";

/** Milliseconds between two looks at the deferred floors. */
export const deferredFloorsLookIntervalMs = 100;

/**
 * The committed floors a replica could not apply yet because its high watermark is below them (a
 * follower behind its leader), the latest one per partition: bounded by the partitions hosted.
 */
export class DeferredFloors {
  readonly #floors = new Map<string, AdvanceTieredFloor>();
  /** No look before this (clock ms): the looks stay off most of the pump's ticks. */
  #lookAtMs = -Infinity;

  /** Keeps `command` for later, unless a higher floor waits already. */
  defer(command: AdvanceTieredFloor): void {
    const waiting = this.#floors.get(command.partition);
    if (waiting === undefined || waiting.upToOffset < command.upToOffset) {
      this.#floors.set(command.partition, command);
    }
  }

  forget(key: string): void {
    this.#floors.delete(key);
  }

  /**
   * The floors whose partition's high watermark has reached them, taken out (those of partitions
   * gone dropped); looked for at most once per `deferredFloorsLookIntervalMs`, else none.
   */
  takeDue(partitions: ReadonlyMap<string, TieredPartition>, nowMs: number): AdvanceTieredFloor[] {
    if (this.#floors.size === 0 || nowMs < this.#lookAtMs) return [];
    this.#lookAtMs = nowMs + deferredFloorsLookIntervalMs;
    const due: AdvanceTieredFloor[] = [];
    for (const [key, command] of this.#floors) {
      const log = partitions.get(key)?.partition.log;
      if (log !== undefined && log.highWatermark < command.upToOffset) continue;
      this.#floors.delete(key);
      if (log !== undefined) due.push(command);
    }
    return due;
  }
}
