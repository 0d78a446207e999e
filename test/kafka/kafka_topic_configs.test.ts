import t from "tap";
import { defaultTopicOptions, type TopicDefaults } from "../../src/broker/catalog/topic_options.ts";
import {
  applyKafkaConfigs,
  describeKafkaConfigs,
  InvalidConfigError,
} from "../../src/kafka/kafka_topic_configs.ts";

const defaults: TopicDefaults = {
  tiered: true,
  localRetentionAgeMs: 86_400_000,
  localRetentionSizeBytes: null,
};
const base = defaultTopicOptions(defaults, 2);
const apply = (configs: Record<string, string | null>) =>
  applyKafkaConfigs(base, Object.entries(configs).map(([name, value]) => ({ name, value })), defaults);

t.test("Kafka's config names set the topic options they name; -1 is unlimited, -2 the local default", (t) => {
  const options = apply({
    "retention.ms": "3600000",
    "retention.bytes": "-1",
    "segment.bytes": String(8 * 1024 * 1024),
    "segment.ms": "60000",
    "message.timestamp.type": "LogAppendTime",
    "remote.storage.enable": "false",
    "local.retention.ms": "-2",
    "local.retention.bytes": String(16 * 1024 * 1024),
    "cleanup.policy": "delete",
    "max.message.bytes": "2097152",
  });
  t.same(options, {
    ...base,
    retentionMaxAgeMs: 3_600_000,
    retentionMaxBytes: null,
    segmentSizeBytes: 8 * 1024 * 1024,
    segmentMaxAgeMs: 60_000,
    timestampType: "log_append_time",
    tiered: false,
    localRetentionAgeMs: 86_400_000,
    localRetentionSizeBytes: 16 * 1024 * 1024,
    maxMessageBytes: 2 * 1024 * 1024,
  });
  const described = Object.fromEntries(describeKafkaConfigs(options).map((c) => [c.name, c.value]));
  t.same(described["retention.bytes"], "-1");
  t.same(described["message.timestamp.type"], "LogAppendTime");
  t.same(apply(Object.fromEntries(describeKafkaConfigs(options).map((c) => [c.name, c.value]))), {
    ...options,
    localRetentionAgeMs: 86_400_000,
  }, "described configs applied again give the same options");
  t.end();
});

t.test("what cannot be applied is refused as INVALID_CONFIG, naming the config", (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ "min.insync.replicas": "2" }, /min\.insync\.replicas: it is not one Strata has/],
    [{ "cleanup.policy": "compact" }, /only "delete" is served/],
    [{ "retention.ms": "soon" }, /expected an integer/],
    [{ "segment.bytes": "13" }, /segment\.bytes must be a size from 14/],
    [{ "segment.bytes": "-1" }, /segment\.bytes must be/],
    [{ "max.message.bytes": "-1" }, /max\.message\.bytes must be a size from 1024/],
    [{ "remote.storage.enable": "yes" }, /expected true or false/],
    [{ "message.timestamp.type": "Now" }, /expected CreateTime or LogAppendTime/],
  ];
  for (const [configs, message] of cases) {
    t.throws(() => apply(configs), InvalidConfigError);
    t.throws(() => apply(configs), message);
  }
  t.end();
});
