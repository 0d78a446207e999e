import { RemoteDataError, UnavailableError } from "./broker_errors.ts";
import {
  PartitionUnavailableError,
  RemoteReadUnavailableError,
  WriteQueueFullError,
} from "../log/log_errors.ts";
import { RemoteCorruptError, RemoteDataLossError } from "../log/remote/remote_reader.ts";
import {
  CorruptError,
  NotFoundError,
  ThrottledError,
  TransportError,
} from "../objectstore/object_store_errors.ts";
import { QueueFullError } from "../runtime/wait_errors.ts";
import { CacheFullError, FetchTimeoutError } from "../tier/cache/chunk_cache.ts";
import { ChunkFileShortError } from "../tier/cache/chunk_files.ts";

/**
 * Runs an append, a read or an await, turning the log's and the remote path's typed failures into
 * the broker's.
 */
export async function translateDataErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const cause = { cause: error };
    // A full wait queue (the write queue, a shard's fetch slots or fetch bandwidth, the disk's
    // workers, the floor's waiters) sheds the request: an overload, retried later.
    if (error instanceof WriteQueueFullError || error instanceof QueueFullError) {
      throw new UnavailableError("overloaded", error.message, cause);
    }
    if (error instanceof PartitionUnavailableError) {
      throw new UnavailableError("partition_unavailable", error.message, cause);
    }
    // Without a remote reader, an evicted range is unavailable, never wrong or missing data.
    if (error instanceof RemoteReadUnavailableError) {
      throw new UnavailableError("remote_read_unavailable", error.message, cause);
    }
    // Remote reads: a full cache or a slow store is transient (the SDK retries, the fetch goes on);
    // missing or corrupt remote data is a fault of its own, never an empty or wrong answer.
    if (
      error instanceof CacheFullError || error instanceof FetchTimeoutError ||
      // A cache file cut short twice in a row: dropped, so the retry fetches it afresh.
      error instanceof ChunkFileShortError ||
      error instanceof TransportError ||
      error instanceof ThrottledError
    ) {
      throw new UnavailableError("transient", error.message, cause);
    }
    if (error instanceof NotFoundError || error instanceof RemoteDataLossError) {
      throw new RemoteDataError("missing", error.message, cause);
    }
    // The store's own integrity checks (an object shorter than its header says, a checksum that does
    // not match) are corrupt remote data too.
    if (error instanceof RemoteCorruptError || error instanceof CorruptError) {
      throw new RemoteDataError("corrupt", error.message, cause);
    }
    throw error;
  }
}
