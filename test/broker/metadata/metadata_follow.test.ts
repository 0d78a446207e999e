import t from "tap";
import { planFollow } from "../../../src/broker/metadata/metadata_follow.ts";
import type { Metadata, TopicMeta } from "../../../src/broker/metadata/metadata.ts";
import { defaultTopicOptions } from "../../../src/broker/catalog/topic_options.ts";

const defaults = { tiered: false, localRetentionAgeMs: null, localRetentionSizeBytes: null };
const topic = (id: number, name: string, partitions = 1): TopicMeta => ({
  id,
  name,
  createdAtMs: 0,
  options: defaultTopicOptions(defaults, partitions),
});
const doc = (topics: TopicMeta[], streamId = 1): Metadata => ({
  version: 2,
  clusterId: "c",
  nextStreamId: streamId + 1,
  streams: [{ id: streamId, name: "s", createdAtMs: 0, nextTopicId: 9, topics }],
});
const open = (meta: TopicMeta, streamId = 1) => ({ streamId, streamName: "s", meta });

t.test("a follower opens new topics, removes dropped ones and changes options, by name and id", (t) => {
  const kept = open(topic(1, "a"));
  const dropped = open(topic(2, "b"));
  const recreated = open(topic(3, "c"));
  const changed = open(topic(4, "d"));
  const next = doc([topic(1, "a"), topic(5, "c"), {
    ...topic(4, "d"),
    options: { ...changed.meta.options, partitions: 1, retentionMaxBytes: 5 },
  }, topic(6, "e")]);
  const plan = planFollow(next, [kept, dropped, recreated, changed], [1, 7]);
  t.same(plan.remove.map((x) => x.meta.name), ["b", "c"]);
  t.same(plan.open.map((x) => `${x.meta.name}#${x.meta.id}`), ["c#5", "e#6"]);
  t.same(plan.changeOptions.map((x) => x.meta.options.retentionMaxBytes), [5]);
  t.same(plan.removeStreamIds, [7], "a stream directory the document no longer names");
  t.end();
});

t.test("a document that matches what is open plans nothing", (t) => {
  const a = open(topic(1, "a"));
  t.same(planFollow(doc([topic(1, "a")]), [a], [1]), {
    remove: [],
    open: [],
    changeOptions: [],
    removeStreamIds: [],
  });
  t.end();
});
