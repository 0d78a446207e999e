import { labelOf } from "../log/partition.ts";
import type { IncarnationTable, KnownPartition } from "../tier/object_class.ts";
import { type Metadata, referencedIncarnations } from "./metadata.ts";
import type { PartitionSlot } from "./partition_opener.ts";

/** What the table needs of a catalog topic. */
interface TopicSlots {
  readonly streamId: number;
  readonly meta: { readonly id: number };
  readonly slots: readonly PartitionSlot[];
}

/**
 * The incarnation table of every partition the catalog serves (a refused one is "unreadable": its
 * objects are kept), with the incarnations restored topics of this cluster read from.
 */
export function incarnationTableOf(doc: Readonly<Metadata>, topics: Iterable<TopicSlots>): IncarnationTable {
  const table: Map<string, KnownPartition> & { referenced?: ReadonlySet<string> } = new Map();
  table.referenced = referencedIncarnations(doc);
  for (const topic of topics) {
    topic.slots.forEach((slot, partitionId) => {
      const key = labelOf({ streamId: topic.streamId, topicId: topic.meta.id, partitionId });
      if (slot.kind !== "open") {
        table.set(key, "unreadable");
        return;
      }
      const sb = slot.partition.superblock;
      table.set(key, {
        createdRevision: sb.createdRevision,
        purgeGeneration: sb.purgeGeneration,
        deletedUpToOffset: sb.deletedUpToOffset,
      });
    });
  }
  return table;
}
