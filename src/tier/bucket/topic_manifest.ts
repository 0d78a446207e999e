import { pack, unpack } from "msgpackr";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";

/**
 * What the bucket says of a topic as a whole (docs/FORMAT.md, "The topic manifest"): its names,
 * ids, creation time and options, uploaded by housekeeping beside its partition 0's manifest
 * whenever the options changed. With the partition manifests it makes the bucket self-describing:
 * a restore finds a topic by name through it and creates it with these options.
 */
export interface TopicManifest {
  /** `storageFormatVersion`. */
  version: number;
  clusterId: string;
  streamId: number;
  streamName: string;
  topicId: number;
  topicName: string;
  createdAtMs: number;
  /** The topic's options as its metadata holds them (the broker's `TopicOptions`). */
  options: Readonly<Record<string, unknown>>;
  /** Set when the topic was itself restored: the topic whose objects hold its oldest segments. */
  restoredFrom?: RestoredTopic;
}

/** The topic a restored topic took its oldest segments from, by cluster and ids. */
export interface RestoredTopic {
  clusterId: string;
  streamId: number;
  topicId: number;
}

/** A topic's facts as the server holds them, for its manifest. */
export interface TopicFacts {
  streamName: string;
  topicName: string;
  createdAtMs: number;
  options: Readonly<Record<string, unknown>>;
  restoredFrom?: RestoredTopic;
}

/** Longest encoded topic manifest read back; anything longer is not one this server wrote. */
export const topicManifestBytesMax = 64 * 1024;

export class TopicManifestError extends Error {
  override name = "TopicManifestError";
  constructor(reason: string, options?: ErrorOptions) {
    super(`Cannot read topic manifest: ${reason}`, options);
  }
}

export function encodeTopicManifest(m: TopicManifest): Uint8Array {
  return pack(m);
}

/** Decodes and checks a topic manifest; another version throws `FormatVersionError`. */
export function decodeTopicManifest(bytes: Uint8Array): TopicManifest {
  if (bytes.length > topicManifestBytesMax) {
    throw new TopicManifestError(`${bytes.length} bytes, more than ${topicManifestBytesMax}`);
  }
  let m: Partial<TopicManifest>;
  try {
    m = unpack(bytes) as Partial<TopicManifest>;
  } catch (error) {
    throw new TopicManifestError("not msgpack", { cause: error });
  }
  if (typeof m?.version === "number" && m.version !== storageFormatVersion) {
    throw new FormatVersionError("a topic manifest", m.version, storageFormatVersion);
  }
  const ids = [m?.streamId, m?.topicId].every((id) => Number.isSafeInteger(id) && (id as number) >= 0);
  const names = [m?.clusterId, m?.streamName, m?.topicName].every((n) => typeof n === "string" && n !== "");
  if (m?.version !== storageFormatVersion || !ids || !names || typeof m.createdAtMs !== "number") {
    throw new TopicManifestError("a field is missing or of the wrong type");
  }
  if (typeof m.options !== "object" || m.options === null || Array.isArray(m.options)) {
    throw new TopicManifestError("its options are not a map");
  }
  const from = m.restoredFrom;
  if (from !== undefined && (typeof from?.clusterId !== "string" || !Number.isSafeInteger(from.topicId))) {
    throw new TopicManifestError("its restoredFrom is not a topic");
  }
  return m as TopicManifest;
}
