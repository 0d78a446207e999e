import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { CompressionTypes, Kafka, logLevel } from "kafkajs";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// kafkajs 2.2 (pure JavaScript, a second client beside librdkafka) against the real server: its
// admin client creates, describes, lists offsets and deletes topics; its producer sends with acks
// 0, 1 and -1 and gzip. Its consumer needs consumer groups, which are not served yet.
t.test("kafkajs admin and producer", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-kafkajs-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const kafka = new Kafka({
    clientId: "strata-test",
    brokers: [kafkaAddressOf(server.stderr())],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());

  t.equal(
    await admin.createTopics({
      topics: [{
        topic: "kjs",
        numPartitions: 3,
        configEntries: [{ name: "retention.ms", value: "86400000" }, {
          name: "message.timestamp.type",
          value: "CreateTime",
        }],
      }],
    }),
    true,
    "created",
  );
  const refused = await admin.createTopics({
    topics: [{ topic: "bad", numPartitions: 1, configEntries: [{ name: "no.such.config", value: "1" }] }],
  }).catch((e) => e);
  t.match(String(refused?.errors?.[0]?.type ?? refused), /INVALID_CONFIG/, "an unknown config is refused");
  const metadata = await admin.fetchTopicMetadata({ topics: ["kjs"] });
  t.equal(metadata.topics[0]!.partitions.length, 3);
  const described = await admin.describeConfigs({
    resources: [{ type: 2, name: "kjs" }],
    includeSynonyms: false,
  });
  const entries = Object.fromEntries(
    described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]),
  );
  t.equal(entries["retention.ms"], "86400000");
  t.equal(entries["message.timestamp.type"], "CreateTime");

  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  for (const acks of [1, -1]) {
    const sent = await producer.send({
      topic: "kjs",
      acks,
      compression: CompressionTypes.GZIP,
      messages: Array.from(
        { length: 10 },
        (_, i) => ({ partition: 0, key: `k${i}`, value: `acks${acks}-${i}` }),
      ),
    });
    t.equal(sent[0]!.errorCode, 0, `acks ${acks}`);
  }
  await producer.send({ topic: "kjs", acks: 0, messages: [{ partition: 0, value: "fire-and-forget" }] });
  let offsets = await admin.fetchTopicOffsets("kjs");
  await waitFor("the acks=0 record to be written", async () => {
    offsets = await admin.fetchTopicOffsets("kjs");
    return offsets.find((o) => o.partition === 0)!.high === "21";
  }, { deadlineMs: 10_000, pace: realTime(20) });
  t.same(
    offsets.find((o) => o.partition === 0),
    { partition: 0, offset: "21", high: "21", low: "0" },
    "21 records",
  );
  const polled =
    await (await fetch(`${server.baseUrl}/streams/kafka/topics/kjs/partitions/0/messages?offset=0&count=100`))
      .json();
  t.same(
    polled.messages.map((m: { payload: string }) => Buffer.from(m.payload, "base64").toString()),
    [
      ...Array.from({ length: 10 }, (_, i) => `acks1-${i}`),
      ...Array.from({ length: 10 }, (_, i) => `acks-1-${i}`),
      "fire-and-forget",
    ],
    "every record, gzip ones decompressed for HTTP",
  );

  t.equal(await admin.deleteTopics({ topics: ["kjs"] }), undefined);
  t.same((await admin.listTopics()).filter((x) => x === "kjs"), [], "deleted");
});
