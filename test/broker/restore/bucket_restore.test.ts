import { join } from "node:path";
import t, { type Test } from "tap";
import { FsObjectStore } from "../../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { encodeManifest } from "../../../src/tier/bucket/manifest.ts";
import {
  deadMarkBody,
  deadMarkKey,
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

// The restore's refusals and its plan over a bucket laid out by hand (the end-to-end restore of a
// real topic is test/e2e/restore.test.ts): a source cluster "5ca1ab1e" with topic kafka/orders, one
// partition of two segments of 10 offsets, under incarnation 00000000000000aa-1.

const source = handLaidPartition;
const inc = { ...source, createdRevision: "00000000000000aa", purgeGeneration: 1 };
const topicManifest = ordersTopicManifest(null);
const put = putObject;
const putSegment = (store: FsObjectStore, start: number) => putLaidSegment(store, inc, start);

async function setup(t: Test) {
  const opened = await openServer(t, { STRATA_SYSTEM_CLUSTER_ID: "0b0b0b0b" });
  const store = new FsObjectStore(new NodeDisk(), join(opened.dir, "data", "objects"), new Rng(3));
  await put(store, topicManifestKey("strata", source.clusterId, 3, 8), encodeTopicManifest(topicManifest));
  await putSegment(store, 0);
  await putSegment(store, 10);
  const restore = async (body: Record<string, unknown>) => {
    const r = await opened.raw("/admin/restore", { method: "POST", body: JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
  };
  return { ...opened, store, restore };
}

t.test("without a manifest the listing and HEADs plan the restore; the source cluster is found or named", async (t) => {
  const { restore, store } = await setup(t);
  const dry = await restore({ stream: "kafka", topic: "orders", dry_run: true });
  t.equal(dry.status, 200, JSON.stringify(dry.body));
  t.same(dry.body.partitions, [{
    partition: 0,
    incarnation: "00000000000000aa-1",
    segments: 2,
    bytes: 200,
    first_offset: 0,
    next_offset: 20,
    sources: [{ from_offset: 0, to_offset: 19, source: "listing" }],
    left_out: [],
  }]);
  await put(store, "strata/_probe/0123456789abcdef", new Uint8Array(1));
  const probed = await restore({ stream: "kafka", topic: "orders", dry_run: true });
  t.equal(probed.status, 200, "a boot probe's leftover object is no cluster");
  await put(store, "strata/c0ffee00/meta/1/1/topic.bin", new Uint8Array(1));
  const two = await restore({ stream: "kafka", topic: "orders", dry_run: true });
  t.equal(two.status, 409);
  t.match(two.body.message, /the bucket holds 2 clusters \(.*5ca1ab1e.*\); name one/);
  const named = await restore({ stream: "kafka", topic: "orders", dry_run: true, cluster_id: "5ca1ab1e" });
  t.equal(named.status, 200, "named, it goes ahead");
});

t.test("an incarnation GC has marked dead is refused, and nothing is created", async (t) => {
  const { restore, store, client } = await setup(t);
  await put(store, deadMarkKey(inc), deadMarkBody);
  const refused = await restore({ stream: "kafka", topic: "orders" });
  t.equal(refused.status, 409);
  t.equal(refused.body.error, "restore_refused");
  t.match(refused.body.message, /incarnation 00000000000000aa-1 is marked dead: GC is deleting it/);
  await t.rejects(client().getTopic("kafka", "orders"), /Cannot find/, "no topic was created");
});

t.test("a bucket of another format version is refused by name", async (t) => {
  const { restore, store } = await setup(t);
  await put(
    store,
    topicManifestKey("strata", source.clusterId, 3, 8),
    encodeTopicManifest({ ...topicManifest, version: 3 }),
  );
  const refused = await restore({ stream: "kafka", topic: "orders" });
  t.equal(refused.status, 409);
  t.match(
    refused.body.message,
    /a topic manifest: it is in format version 3, this server reads format version 2/,
  );
});

t.test("a topic that was itself restored is refused: its oldest segments are another topic's objects", async (t) => {
  const { restore, store } = await setup(t);
  const restored = { ...topicManifest, restoredFrom: { clusterId: "0ld0ld00", streamId: 1, topicId: 2 } };
  await put(store, topicManifestKey("strata", source.clusterId, 3, 8), encodeTopicManifest(restored));
  const refused = await restore({ stream: "kafka", topic: "orders", dry_run: true });
  t.equal(refused.status, 409);
  t.match(refused.body.message, /it was itself restored.*cluster 0ld0ld00's stream 1 topic 2/);
});

t.test("a gap refuses only when newer data would be left out; an older run before it is reported", async (t) => {
  const { restore, store } = await setup(t);
  await putSegment(store, 30); // offsets 20 to 29 are missing: 30 is newer than the chain 0..19
  const planned = await restore({ stream: "kafka", topic: "orders", dry_run: true });
  t.equal(planned.status, 200, "the newest gapless run is 30..39");
  t.same(planned.body.partitions[0].left_out.map((l: { start_offset: number }) => l.start_offset), [0, 10]);
  t.equal(planned.body.partitions[0].next_offset, 40);
  // A manifest naming 30 with another size, and 30's .index gone: 30 is left out, and it is newer.
  await store.delete([segmentKeys(inc, 30, null).index]);
  const manifest = encodeManifest({
    version: 2,
    streamId: 3,
    topicId: 8,
    partitionId: 0,
    createdRevision: inc.createdRevision,
    purgeGeneration: 1,
    tieredUpToOffset: 40,
    deletedUpToOffset: 0,
    segments: [],
  });
  await put(store, `strata/${source.clusterId}/meta/3/8/0/${inc.createdRevision}-1/manifest.bin`, manifest);
  const newer = await restore({ stream: "kafka", topic: "orders" });
  t.equal(newer.status, 409);
  t.match(
    newer.body.message,
    /offset 30 lies past the chain the bucket holds whole \(its \.index object is missing\)/,
  );
});
