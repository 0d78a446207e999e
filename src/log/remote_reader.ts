import type { Segment } from "./segment.ts";

/** One chunk of a remote segment's `.log`: the bytes from `start`, whole batches only. */
export interface RemoteChunk {
  start: number;
  bytes: Uint8Array;
  /** Names the chunk for `drop`. */
  cacheKey: string;
}

/**
 * How a partition log reads segments whose `.log` was evicted: the tier service's chunk cache
 * implements it. Without one, such reads answer `RemoteReadUnavailableError`.
 */
export interface RemoteReader {
  /** The chunk holding byte `position` of the segment. */
  chunkAt(segment: Segment, position: number): Promise<RemoteChunk>;
  /** Forgets a chunk whose bytes failed their checksum, so the next read fetches it again. */
  drop(chunk: RemoteChunk): Promise<void>;
}

/** A remote chunk failed its checksum twice: never served. */
export class RemoteCorruptError extends Error {
  override name = "RemoteCorruptError";
  constructor(label: string, segment: number, position: number) {
    super(
      `Cannot read partition ${label} at segment ${segment}, byte ${position}: the remote data fails its checksum`,
    );
  }
}
