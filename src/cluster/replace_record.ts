import type { RemoteMarker } from "../log/remote/remote_marker.ts";
import type { ReplaceRemoteSegments } from "../log/segment/segment_replacement.ts";

/**
 * A committed replace of remote segments (a merge) as etcd stores it, one key per replace under
 * `{prefix}/replaces/{stream}/{topic}/{partition}/{start:020}`: the replacing segments' markers and
 * the epoch of the leader that committed it. Every replica applies it to its chain.
 */
export interface ReplaceRecord {
  purgeGeneration: number;
  leaderEpoch: number;
  markers: RemoteMarker[];
}

/** The record as stored: JSON with fixed field names. */
export function encodeReplaceRecord(record: ReplaceRecord): string {
  return JSON.stringify({
    purge_generation: record.purgeGeneration,
    leader_epoch: record.leaderEpoch,
    markers: record.markers.map((m) => ({
      start_offset: m.startOffset,
      end_offset: m.endOffset,
      size_bytes: m.sizeBytes,
      index_size_bytes: m.indexSizeBytes,
      start_timestamp_us: m.startTimestampUs,
      end_timestamp_us: m.endTimestampUs,
      max_timestamp_us: m.maxTimestampUs,
      created_revision: m.createdRevision,
      purge_generation: m.purgeGeneration,
      log_crc32: m.logCrc32,
      merged: m.merged,
    })),
  });
}

const whole = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** Reads a stored record; one that is not is an error naming the key. */
export function decodeReplaceRecord(key: string, value: string): ReplaceRecord {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(value);
  } catch (error) {
    throw new Error(`Cannot read the replace at ${key}: not JSON`, { cause: error });
  }
  const { purge_generation: purgeGeneration, leader_epoch: leaderEpoch, markers } = json;
  if (!whole(purgeGeneration) || !whole(leaderEpoch) || !Array.isArray(markers) || markers.length === 0) {
    throw new Error(`Cannot read the replace at ${key}: fields missing or of the wrong type`);
  }
  return { purgeGeneration, leaderEpoch, markers: markers.map((m) => markerOf(key, m)) };
}

function markerOf(key: string, json: Record<string, unknown>): RemoteMarker {
  const numbers = [
    "start_offset",
    "end_offset",
    "size_bytes",
    "index_size_bytes",
    "start_timestamp_us",
    "end_timestamp_us",
    "max_timestamp_us",
    "purge_generation",
    "log_crc32",
  ];
  const revision = json.created_revision;
  if (
    numbers.some((n) => !whole(json[n])) || typeof revision !== "string" ||
    !/^[0-9a-f]{16}$/.test(revision) ||
    typeof json.merged !== "boolean"
  ) {
    throw new Error(`Cannot read the replace at ${key}: a marker's fields are missing or of the wrong type`);
  }
  const n = (name: string) => json[name] as number;
  return {
    startOffset: n("start_offset"),
    endOffset: n("end_offset"),
    sizeBytes: n("size_bytes"),
    indexSizeBytes: n("index_size_bytes"),
    startTimestampUs: n("start_timestamp_us"),
    endTimestampUs: n("end_timestamp_us"),
    maxTimestampUs: n("max_timestamp_us"),
    createdRevision: revision,
    purgeGeneration: n("purge_generation"),
    logCrc32: n("log_crc32"),
    merged: json.merged,
  };
}

/** The command a stored record stands for, as every replica applies it. */
export function replaceCommandOf(partition: string, record: ReplaceRecord): ReplaceRemoteSegments {
  return {
    kind: "replace_remote_segments",
    partition,
    purgeGeneration: record.purgeGeneration,
    markers: record.markers,
  };
}
