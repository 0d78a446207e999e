import t from "tap";
import {
  AlreadyExistsError,
  RemoteSegmentsExistError,
  ResourceNotFoundError,
  UnavailableError,
} from "../../../src/broker/broker_errors.ts";
import {
  addStream,
  addTopic,
  changeTopicOptions,
  type Metadata,
  removeStream,
  removeTopic,
} from "../../../src/broker/metadata/metadata.ts";
import {
  maxMessageBytesDefault,
  segmentSizeBytesMin,
  type TopicOptions,
} from "../../../src/broker/catalog/topic_options.ts";

const options: TopicOptions = {
  partitions: 1,
  segmentSizeBytes: segmentSizeBytesMin,
  segmentMaxAgeMs: null,
  retentionMaxAgeMs: null,
  retentionMaxBytes: null,
  tiered: true,
  localRetentionAgeMs: null,
  localRetentionSizeBytes: null,
  retentionConsumerBarrier: true,
  timestampType: "create_time",
  maxMessageBytes: maxMessageBytesDefault,
  replicationFactor: null,
  readReplicaOf: null,
};

/** Stream 4 "s" with topic 2 "t"; the next stream is 5, the next topic of "s" is 3. */
const doc = (): Metadata => ({
  version: 2,
  clusterId: "c",
  nextStreamId: 5,
  streams: [{
    id: 4,
    name: "s",
    createdAtMs: 0,
    nextTopicId: 3,
    topics: [{ id: 2, name: "t", createdAtMs: 0, options }],
  }],
});

t.test("a stream takes the document's next id, and the id after it is next", (t) => {
  const d = doc();
  t.same(addStream(d, "u", 9), { id: 5, name: "u", createdAtMs: 9, nextTopicId: 1, topics: [] });
  t.equal(d.nextStreamId, 6);
  t.throws(() => addStream(d, "s", 9), new AlreadyExistsError("Cannot create stream s: it already exists"));
  t.equal(d.streams.length, 2, "a refused add changes nothing");
  t.end();
});

t.test("a topic is added under the id its partitions were made for, only while that id is the next", (t) => {
  const d = doc();
  addTopic(d, 4, "s", { id: 3, name: "u", createdAtMs: 1, options });
  t.same(d.streams[0]!.topics.map((x) => [x.id, x.name]), [[2, "t"], [3, "u"]]);
  t.equal(d.streams[0]!.nextTopicId, 4);
  t.throws(
    () => addTopic(d, 4, "s", { id: 4, name: "u", createdAtMs: 1, options }),
    new AlreadyExistsError("Cannot create topic s/u: it already exists"),
  );
  t.throws(
    () => addTopic(d, 4, "s", { id: 3, name: "v", createdAtMs: 1, options }),
    new UnavailableError("transient", "Cannot create topic s/v: a concurrent change took topic id 3"),
    "the id its partitions were made for was given to another topic",
  );
  t.throws(
    () => addTopic(d, 9, "s", { id: 1, name: "v", createdAtMs: 1, options }),
    new ResourceNotFoundError("Cannot find stream s"),
  );
  t.equal(d.streams[0]!.topics.length, 2, "refused adds change nothing");
  t.end();
});

t.test("options change from the document's current ones; tiering stays on while remote segments exist", (t) => {
  const d = doc();
  const change = { streamId: 4, topicId: 2, label: "s/t", hasRemoteSegments: true };
  const changed = changeTopicOptions(d, { ...change, change: (o) => ({ ...o, retentionMaxBytes: 10 }) });
  t.equal(changed.retentionMaxBytes, 10);
  t.equal(d.streams[0]!.topics[0]!.options, changed);
  t.throws(
    () => changeTopicOptions(d, { ...change, change: (o) => ({ ...o, tiered: false }) }),
    new RemoteSegmentsExistError("Cannot turn tiering off for s/t: it has remote segments"),
  );
  t.equal(d.streams[0]!.topics[0]!.options.tiered, true);
  t.equal(
    changeTopicOptions(d, { ...change, hasRemoteSegments: false, change: (o) => ({ ...o, tiered: false }) })
      .tiered,
    false,
  );
  t.throws(
    () => changeTopicOptions(d, { ...change, topicId: 7, change: (o) => o }),
    new ResourceNotFoundError("Cannot find topic s/t"),
  );
  t.end();
});

t.test("removals take what the document still has, and nothing else", (t) => {
  const d = doc();
  removeTopic(d, 4, 9);
  removeTopic(d, 8, 2);
  t.equal(d.streams[0]!.topics.length, 1, "an unknown topic or stream removes nothing");
  removeTopic(d, 4, 2);
  t.same(d.streams[0]!.topics, []);
  removeStream(d, 8);
  t.equal(d.streams.length, 1);
  removeStream(d, 4);
  t.same(d.streams, []);
  t.equal(d.nextStreamId, 5, "ids are never given back");
  t.end();
});
