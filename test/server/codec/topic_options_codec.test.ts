import t from "tap";
import { InvalidTopicOptionError } from "../../../src/broker/broker_errors.ts";
import {
  checkTopicOption,
  segmentSizeBytesDefault,
  type TopicDefaults,
  type TopicOptions,
} from "../../../src/broker/catalog/topic_options.ts";
import {
  parseTopicOptions,
  patchTopicOptions,
  topicOptionsJson,
} from "../../../src/server/codec/topic_options_codec.ts";

const defaults: TopicDefaults = { tiered: true, localRetentionAgeMs: 60_000, localRetentionSizeBytes: null };
const MiB = 1024 * 1024;

t.test("a create request's fields by their API names, with units; what it leaves out has the defaults", (t) => {
  t.same(parseTopicOptions({}, defaults), {
    partitions: 1,
    segmentSizeBytes: segmentSizeBytesDefault,
    segmentMaxAgeMs: null,
    retentionMaxAgeMs: null,
    retentionMaxBytes: null,
    tiered: true,
    localRetentionAgeMs: 60_000,
    localRetentionSizeBytes: null,
    retentionConsumerBarrier: true,
    timestampType: "create_time",
    maxMessageBytes: 1024 * 1024 + 12,
    replicationFactor: null,
    readReplicaOf: null,
  });
  t.same(
    parseTopicOptions({
      partitions: 3,
      segment_size: "1 MiB",
      segment_max_age: "1 h",
      retention_max_age: 5000,
      retention_max_bytes: "3 MiB",
      tiered: false,
      local_retention_age: "unlimited",
      local_retention_size: "8 MiB",
      retention_consumer_barrier: false,
      timestamp_type: "log_append_time",
      max_message_bytes: "2 MiB",
      replication_factor: 3,
    }, defaults),
    {
      partitions: 3,
      segmentSizeBytes: MiB,
      segmentMaxAgeMs: 3_600_000,
      retentionMaxAgeMs: 5000,
      retentionMaxBytes: 3 * MiB,
      tiered: false,
      localRetentionAgeMs: null,
      localRetentionSizeBytes: 8 * MiB,
      retentionConsumerBarrier: false,
      timestampType: "log_append_time",
      maxMessageBytes: 2 * MiB,
      replicationFactor: 3,
      readReplicaOf: null,
    },
  );
  t.throws(
    () => parseTopicOptions({ replication_factor: 17 }, defaults),
    /replication_factor must be an integer from 1 to 16/,
  );
  t.end();
});

t.test("each bad field is refused, typed, by its API name and the broker's range", (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [{ partitions: 0 }, "Cannot create topic: partitions must be an integer from 1 to 1024"],
    [
      { timestamp_type: "now" },
      'Cannot use timestamp_type "now": expected "create_time" or "log_append_time"',
    ],
    [{ partitions: 1.5 }, "Cannot create topic: partitions must be an integer from 1 to 1024"],
    [{ partitions: "2" }, "Cannot create topic: partitions must be an integer from 1 to 1024"],
    [
      { segment_size: "13 B" },
      `Cannot create topic: segment_size must be a size from 14 to ${2048 * MiB} bytes`,
    ],
    [
      { max_message_bytes: "1000 B" },
      `Cannot create topic: max_message_bytes must be a size from 1024 to ${1024 * MiB} bytes`,
    ],
    [
      { segment_max_age: "999 ms" },
      "Cannot create topic: segment_max_age must be a duration of at least 1000 ms",
    ],
    [
      { retention_max_age: "soon" },
      "Cannot create topic: retention_max_age must be a duration of at least 1 ms",
    ],
    [
      { retention_max_bytes: 0 },
      `Cannot create topic: retention_max_bytes must be a size from 1 to ${Number.MAX_SAFE_INTEGER} bytes`,
    ],
    [
      { local_retention_age: 10 },
      "Cannot create topic: local_retention_age must be a duration of at least 1000 ms",
    ],
    [
      { local_retention_size: "1 KiB" },
      `Cannot create topic: local_retention_size must be a size from ${MiB} to ${Number.MAX_SAFE_INTEGER} bytes`,
    ],
    [{ tiered: "yes" }, "Cannot set tiered: expected true or false"],
    [{ retention_consumer_barrier: 1 }, "Cannot set retention_consumer_barrier: expected true or false"],
  ];
  for (const [fields, message] of cases) {
    t.throws(
      () => parseTopicOptions(fields, defaults),
      new InvalidTopicOptionError(message),
      JSON.stringify(fields),
    );
  }
  t.throws(
    () => checkTopicOption("partitions", "partition_count", 2000),
    new InvalidTopicOptionError("Cannot create topic: partition_count must be an integer from 1 to 1024"),
    "the broker's check names the option as its caller does",
  );
  t.equal(checkTopicOption("segmentSizeBytes", "segment_size", MiB), MiB);
  t.end();
});

t.test("a PATCH changes only the fields present and refuses those fixed at creation", (t) => {
  const current = parseTopicOptions(
    { partitions: 2, segment_size: "1 MiB", retention_max_bytes: "3 MiB" },
    defaults,
  );
  const patched = patchTopicOptions(current, {
    retention_max_bytes: "unlimited",
    local_retention_size: "8 MiB",
  }, defaults);
  t.same(patched, { ...current, retentionMaxBytes: null, localRetentionSizeBytes: 8 * MiB });
  t.same(patchTopicOptions(current, {}, defaults), current, "an empty patch changes nothing");
  const larger = patchTopicOptions(current, { max_message_bytes: "8 MiB" }, defaults);
  t.equal(larger.maxMessageBytes, 8 * MiB, "max_message_bytes may change");
  t.equal(
    patchTopicOptions(larger, { max_message_bytes: null }, defaults).maxMessageBytes,
    1024 * 1024 + 12,
    "null takes the default back",
  );
  for (const name of ["partitions", "segment_size", "name"]) {
    t.throws(
      () => patchTopicOptions(current, { [name]: 1 }, defaults),
      new InvalidTopicOptionError(`Cannot update topic: ${name} is fixed at creation`),
    );
  }
  t.throws(() => patchTopicOptions(current, { segment_max_age: "1 ms" }, defaults), InvalidTopicOptionError);
  for (const name of ["tiered", "retention_consumer_barrier"]) {
    t.throws(
      () => patchTopicOptions(current, { [name]: null }, defaults),
      new InvalidTopicOptionError(`Cannot set ${name}: expected true or false`),
      `a null ${name} is refused, not stored`,
    );
  }
  t.end();
});

t.test("answers show the options by the names requests give them, and read back as they were", (t) => {
  const options: TopicOptions = parseTopicOptions({ partitions: 4, retention_max_age: "1 d" }, defaults);
  const json = topicOptionsJson(options);
  t.same(Object.keys(json), [
    "partitions",
    "segment_size",
    "segment_max_age",
    "retention_max_age",
    "retention_max_bytes",
    "tiered",
    "local_retention_age",
    "local_retention_size",
    "retention_consumer_barrier",
    "timestamp_type",
    "max_message_bytes",
    "replication_factor",
    "read_replica_of",
  ]);
  t.same(parseTopicOptions(json, defaults), options, "an answer's options, sent back, are the same options");
  t.end();
});

t.test("a local retention of 0 means the server's default, in a create and in a PATCH; unlimited means none", (t) => {
  const sized: TopicDefaults = {
    tiered: true,
    localRetentionAgeMs: 60_000,
    localRetentionSizeBytes: 64 * MiB,
  };
  const created = parseTopicOptions({ local_retention_age: 0, local_retention_size: "0 B" }, sized);
  t.same([created.localRetentionAgeMs, created.localRetentionSizeBytes], [60_000, 64 * MiB]);
  const own = parseTopicOptions({ local_retention_age: "2 h", local_retention_size: "unlimited" }, sized);
  t.same([own.localRetentionAgeMs, own.localRetentionSizeBytes], [7_200_000, null]);
  const back = patchTopicOptions(own, { local_retention_age: "0 s", local_retention_size: 0 }, sized);
  t.same(
    [back.localRetentionAgeMs, back.localRetentionSizeBytes],
    [60_000, 64 * MiB],
    "back to the defaults",
  );
  t.throws(
    () => parseTopicOptions({ local_retention_age: "10 ms" }, sized),
    /local_retention_age must be a duration of at least 1000 ms/,
    "between 0 and the minimum is still refused",
  );
  t.end();
});
