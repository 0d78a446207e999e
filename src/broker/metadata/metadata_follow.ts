import type { Metadata, StreamMeta, TopicMeta } from "./metadata.ts";

/** A topic as a server has it open: where it is, by name and id. */
export interface OpenTopicRef {
  streamId: number;
  streamName: string;
  meta: TopicMeta;
}

/** What a server does to catch up with a document another server committed. */
export interface FollowPlan<T extends OpenTopicRef> {
  /** Open topics the document no longer names (or names under another id): closed and removed. */
  remove: T[];
  /** Topics the document names that are not open: opened, their partitions created. */
  open: Array<{ stream: StreamMeta; meta: TopicMeta }>;
  /** Open topics whose options the document changed. */
  changeOptions: Array<{ topic: T; meta: TopicMeta }>;
  /** Stream ids on disk the document no longer names: their directories removed. */
  removeStreamIds: number[];
}

/**
 * Compares the topics a server has open with a newer document, by name and id: a topic deleted
 * and created again under the same name elsewhere is removed and opened again. Pure.
 */
export function planFollow<T extends OpenTopicRef>(
  doc: Readonly<Metadata>,
  open: readonly T[],
  streamIdsOnDisk: readonly number[],
): FollowPlan<T> {
  const plan: FollowPlan<T> = { remove: [], open: [], changeOptions: [], removeStreamIds: [] };
  const byName = new Map(open.map((t) => [`${t.streamName}\u0000${t.meta.name}`, t]));
  const kept = new Set<T>();
  for (const stream of doc.streams) {
    for (const meta of stream.topics) {
      const topic = byName.get(`${stream.name}\u0000${meta.name}`);
      if (topic !== undefined && topic.meta.id === meta.id && topic.streamId === stream.id) {
        kept.add(topic);
        const changed = JSON.stringify(topic.meta.options) !== JSON.stringify(meta.options);
        if (changed) plan.changeOptions.push({ topic, meta });
        continue;
      }
      plan.open.push({ stream, meta });
    }
  }
  plan.remove = open.filter((t) => !kept.has(t));
  plan.removeStreamIds = streamIdsOnDisk.filter((id) => !doc.streams.some((s) => s.id === id));
  return plan;
}
