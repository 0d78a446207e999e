import type { PartitionStats, ProduceResult } from "../../broker/data_plane.ts";
import type { TopicDescription } from "../../broker/catalog/catalog.ts";
import type { StreamMeta } from "../../broker/metadata/metadata.ts";
import { topicOptionsJson } from "./topic_options_codec.ts";

/** The JSON the API shows of the broker's records, with the API's snake_case names. */
export type View = Record<string, unknown>;

export function streamView(s: StreamMeta): View {
  return {
    id: s.id,
    name: s.name,
    created_at: s.createdAtMs,
    topics: s.topics.map((t) => ({ id: t.id, name: t.name, partitions: t.options.partitions })),
  };
}

export function topicView({ meta, sizeBytes }: TopicDescription): View {
  return {
    id: meta.id,
    name: meta.name,
    created_at: meta.createdAtMs,
    ...topicOptionsJson(meta.options),
    size_bytes: sizeBytes,
  };
}

export function producedView(r: ProduceResult): View {
  return { partition: r.partition, base_offset: r.baseOffset, count: r.count };
}

export function partitionStatsView(s: PartitionStats): View {
  return {
    first_offset: s.firstOffset,
    next_offset: s.nextOffset,
    size_bytes: s.sizeBytes,
    local_size_bytes: s.localSizeBytes,
    remote_size_bytes: s.remoteSizeBytes,
    remote_segments: s.remoteSegments,
    index_cache_bytes: s.remoteIndexBytes,
    merged_segments: s.mergedSegments,
    small_remote_segments: s.smallRemoteSegments,
    tiered_up_to_offset: s.tieredUpToOffset,
    deleted_up_to_offset: s.deletedUpToOffset,
    shard: s.shard,
    segments: s.segments.map((x) => ({
      start_offset: x.startOffset,
      end_offset: x.endOffset,
      size_bytes: x.sizeBytes,
      sealed: x.sealed,
      location: x.location,
    })),
  };
}
