import { join } from "node:path";
import t, { type Test } from "tap";
import { FsObjectStore } from "../../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { encodeManifest, type ManifestSegment } from "../../../src/tier/bucket/manifest.ts";
import {
  deadMarkBody,
  deadMarkKey,
  manifestKey,
  segmentKeys,
  topicManifestKey,
} from "../../../src/tier/bucket/object_keys.ts";
import { encodeTopicManifest } from "../../../src/tier/bucket/topic_manifest.ts";
import { openServer } from "../../helpers/open_server.ts";
import {
  handLaidPartition,
  ordersTopicManifest,
  putObject,
  putSegment as putLaidSegment,
} from "../../helpers/hand_laid_bucket.ts";

// The follower over a bucket laid out by hand (the end-to-end run against a real source is
// test/e2e/read_replica.test.ts): a source cluster "5ca1ab1e" with topic kafka/orders, one
// partition under incarnation 00000000000000aa-0, segments of 10 offsets.

const source = handLaidPartition;
const inc = { ...source, createdRevision: "00000000000000aa", purgeGeneration: 0 };
const topicManifest = ordersTopicManifest(3_600_000);
const put = putObject;
const putSegment = (store: FsObjectStore, start: number) => putLaidSegment(store, inc, start);

/** The manifest entry of segment `start`; without the marker's fields when `whole` is false. */
const entry = (start: number, whole = true): ManifestSegment => ({
  startOffset: start,
  endOffset: start + 9,
  sizeBytes: 100,
  maxTimestampUs: 2,
  logCrc32: whole ? 77 : null,
  indexSizeBytes: whole ? 8 : null,
  startTimestampUs: whole ? 1 : null,
  endTimestampUs: whole ? 2 : null,
});

async function putManifest(store: FsObjectStore, segments: ManifestSegment[], deletedUpToOffset = 0) {
  const bytes = encodeManifest({
    version: 2,
    streamId: 3,
    topicId: 8,
    partitionId: 0,
    createdRevision: inc.createdRevision,
    purgeGeneration: 0,
    tieredUpToOffset: segments.at(-1)!.endOffset + 1,
    deletedUpToOffset,
    segments,
  });
  await put(store, manifestKey(inc), bytes, { "format-version": "2" });
}

async function setup(t: Test) {
  const opened = await openServer(t, { STRATA_SYSTEM_CLUSTER_ID: "0b0b0b0b" });
  const store = new FsObjectStore(new NodeDisk(), join(opened.dir, "data", "objects"), new Rng(3));
  await put(store, topicManifestKey("strata", source.clusterId, 3, 8), encodeTopicManifest(topicManifest));
  const client = opened.client();
  await client.createStream("kafka");
  const create = async (name: string) =>
    await client.createTopic("kafka", {
      name,
      read_replica_of: { cluster_id: source.clusterId, stream: "kafka", topic: "orders" },
    });
  const range = async (name: string) => {
    const p = await client.partition("kafka", name, 0);
    return [p["first_offset"], p["next_offset"]];
  };
  const follower = opened.server.readReplicas!;
  return { ...opened, store, create, range, follower, client };
}

t.test("a manifest is read only when its ETag changed, and its new segments are planted", async (t) => {
  const { store, create, range, follower } = await setup(t);
  await putSegment(store, 0);
  await putSegment(store, 10);
  await putManifest(store, [entry(0), entry(10)]);
  const created = await create("r");
  t.equal(created["retention_max_age"], null, "no retention of its own: the source's rules");
  t.same(await range("r"), [0, 20]);
  t.match(await follower.pollOnce(), { topics: 1, manifestsRead: 1, segmentsPlanted: 0 });
  t.match(await follower.pollOnce(), { manifestsRead: 0, notModified: 0 }, "same ETag: no GET at all");
  await putSegment(store, 20);
  await putSegment(store, 30);
  await putManifest(store, [entry(0), entry(10), entry(20), entry(30, false)]);
  t.match(await follower.pollOnce(), { manifestsRead: 1, segmentsPlanted: 2, failures: 0 });
  t.same(await range("r"), [0, 40], "segment 30 from its HEAD, as the manifest lacks its marker's fields");
  await putManifest(store, [entry(20), entry(30)], 20);
  t.match(await follower.pollOnce(), { manifestsRead: 1, segmentsRetired: 2 });
  t.same(await range("r"), [20, 40], "what the source's retention deleted is retired");
  t.ok(await store.head(segmentKeys(inc, 0, null).log), "the replica deletes no object");
});

t.test("an empty replica starts with the source's first manifest; a dead incarnation ends the following", async (t) => {
  const { store, create, range, follower } = await setup(t);
  await create("r");
  t.same(await range("r"), [0, 0], "the source has nothing yet");
  t.match(await follower.pollOnce(), { manifestsRead: 0 });
  await putSegment(store, 50);
  await putManifest(store, [entry(50)], 50);
  t.match(await follower.pollOnce(), { manifestsRead: 1, segmentsPlanted: 1, failures: 0 });
  t.same(await range("r"), [50, 60], "it starts where the source's log does");
  await put(store, deadMarkKey(inc), deadMarkBody);
  await putSegment(store, 60);
  await putManifest(store, [entry(50), entry(60)], 50);
  t.match(await follower.pollOnce(), { manifestsRead: 0, segmentsPlanted: 0 });
  t.same(await range("r"), [50, 60], "nothing of a dead incarnation is planted");
});

t.test("a read replica is created only from what the bucket describes, and only once", async (t) => {
  const { create, client, raw } = await setup(t);
  await t.rejects(
    client.createTopic("kafka", {
      name: "x",
      read_replica_of: { cluster_id: source.clusterId, stream: "kafka", topic: "nothing" },
    }),
    { status: 409, code: "read_replica_refused", message: /no topic manifest of kafka\/nothing/ },
  );
  await t.rejects(
    client.createTopic("kafka", {
      name: "x",
      read_replica_of: {
        cluster_id: source.clusterId,
        stream: "kafka",
        topic: "orders",
        bucket: "elsewhere",
      },
    }),
    { status: 409, code: "read_replica_refused", message: /the fs backend has no other bucket/ },
  );
  await create("r");
  await t.rejects(create("r"), { status: 409, code: "already_exists" });
  const withOptions = await raw("/streams/kafka/topics", {
    method: "POST",
    body: JSON.stringify({
      name: "y",
      partitions: 3,
      read_replica_of: { cluster_id: "c", stream: "s", topic: "t" },
    }),
  });
  t.equal(withOptions.status, 400);
  t.match((await withOptions.json()).message, /with "partitions": its options are its source's/);
  const badSource = await raw("/streams/kafka/topics", {
    method: "POST",
    body: JSON.stringify({ name: "y", read_replica_of: { cluster_id: "c", stream: "s" } }),
  });
  t.equal(badSource.status, 400);
  t.match((await badSource.json()).message, /"read_replica_of.topic" must be a non-empty string/);
  const badBucket = await raw("/streams/kafka/topics", {
    method: "POST",
    body: JSON.stringify({
      name: "y",
      read_replica_of: { cluster_id: "c", stream: "s", topic: "t", bucket: "No/Way" },
    }),
  });
  t.equal(badBucket.status, 400);
  t.match((await badBucket.json()).message, /"read_replica_of.bucket" must be a bucket name/);
});

t.test("a source's merge of planted segments replaces them in the replica; one across its end is planted", async (t) => {
  const { store, create, client, follower } = await setup(t);
  for (const start of [0, 10, 20, 30]) await putSegment(store, start);
  await putManifest(store, [entry(0), entry(10), entry(20), entry(30)]);
  await create("r");
  const merged = (start: number, end: number): ManifestSegment => ({
    ...entry(start),
    endOffset: end,
    sizeBytes: 100 * ((end - start + 1) / 10),
    merged: true,
  });
  const chain = async () =>
    ((await client.partition("kafka", "r", 0)) as {
      segments: { start_offset: number; end_offset: number }[];
    })
      .segments.map((s) => [s.start_offset, s.end_offset]);
  await putManifest(store, [entry(0), merged(10, 29), entry(30)]);
  t.match(await follower.pollOnce(), { manifestsRead: 1, segmentsReplaced: 2, failures: 0 });
  t.same(await chain(), [[0, 9], [10, 29], [30, 39], [40, 39]], "the merge took the place of 10 and 20");
  t.match(await follower.pollOnce(), { segmentsReplaced: 0 }, "held already: nothing to do");
  // A merge of 30 (planted) and 40 (not yet): planted first, in place of 30.
  const log = new Uint8Array(200);
  log[16] = 2;
  const keys = segmentKeys(inc, 30, 49);
  await putObject(store, keys.log, log, { "format-version": "2" });
  await putObject(store, keys.index, new Uint8Array(8), { "format-version": "2" });
  await putManifest(store, [entry(0), merged(10, 29), merged(30, 49)]);
  t.match(await follower.pollOnce(), { segmentsPlanted: 1, failures: 0 });
  t.same(await chain(), [[0, 9], [10, 29], [30, 49], [50, 49]]);
});
