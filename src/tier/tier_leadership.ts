/**
 * Which partitions a node uploads for: only a partition's leader uploads, and its floor commands
 * commit only under the leader epoch it holds (docs/DESIGN.md, "Tiering across replicas"). Every
 * replica, leading or not, applies committed floors and evicts below them.
 */
export interface TierLeadership {
  /** The leader epoch this node leads the partition `key` under now; null when it does not lead it. */
  epochOf(key: string): number | null;
  /** Hears the key of each partition whose leadership here may have changed. */
  onChange(listener: (key: string) => void): void;
}

/** What a change of leadership asks of the upload core: end the current term, start one. */
export interface UploadTermChange {
  /** The partition's uploads under the old epoch end (an upload in flight becomes an orphan). */
  close: boolean;
  /** The epoch of the term that starts, or null when none does. */
  open: number | null;
}

/**
 * From the epoch a partition's uploads run under (undefined: none run) and the epoch it is led
 * under now (null: not here), what changes: nothing when they agree; otherwise the old term closes
 * and, when this node leads, a new one opens from the committed floor.
 */
export function uploadTermChange(current: number | undefined, next: number | null): UploadTermChange {
  if (current === (next ?? undefined)) return { close: false, open: null };
  return { close: current !== undefined, open: next };
}
