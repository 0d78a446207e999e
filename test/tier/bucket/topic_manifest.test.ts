import { pack } from "msgpackr";
import t from "tap";
import { FormatVersionError } from "../../../src/runtime/format_version_error.ts";
import {
  decodeTopicManifest,
  encodeTopicManifest,
  type TopicManifest,
  topicManifestBytesMax,
} from "../../../src/tier/bucket/topic_manifest.ts";

const manifest: TopicManifest = {
  version: 2,
  clusterId: "c1",
  streamId: 3,
  streamName: "kafka",
  topicId: 7,
  topicName: "orders",
  createdAtMs: 1_700_000_000_000,
  options: { partitions: 4, tiered: true },
};

t.test("a topic manifest reads back as written", (t) => {
  t.same(decodeTopicManifest(encodeTopicManifest(manifest)), manifest);
  t.end();
});

t.test("anything else is refused by name: another version, a missing field, not msgpack, too long", (t) => {
  t.throws(() => decodeTopicManifest(pack({ ...manifest, version: 3 })), FormatVersionError);
  for (
    const broken of [{ ...manifest, topicName: "" }, { ...manifest, streamId: -1 }, {
      ...manifest,
      createdAtMs: "x",
    }]
  ) {
    t.throws(() => decodeTopicManifest(pack(broken)), /Cannot read topic manifest: a field is missing/);
  }
  t.throws(() => decodeTopicManifest(pack({ ...manifest, options: [1] })), /its options are not a map/);
  t.throws(
    () => decodeTopicManifest(new Uint8Array([0x85, 0xa1])),
    /Cannot read topic manifest: not msgpack/,
  );
  t.throws(
    () => decodeTopicManifest(new Uint8Array(topicManifestBytesMax + 1)),
    /Cannot read topic manifest: \d+ bytes, more than/,
  );
  t.end();
});
