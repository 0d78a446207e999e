import { join } from "node:path";
import t from "tap";
import { type PolledMessage, StrataClient } from "../../src/client/strata_client.ts";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { decodeManifest } from "../../src/tier/bucket/manifest.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";
import {
  createQuietTopic,
  mergingConfig,
  payloadOf,
  perRound,
  produceRound,
  segmentsOf,
  type SegmentView,
} from "../helpers/quiet_topic.ts";

// A quiet tiered topic rolls a segment a second; once they are evicted, an idle shard merges them
// into objects of about the topic's segment_size, and the log reads back the same.
const rounds = 12;

/** Every message from offset 0, as a consumer reads it. */
async function readAll(client: StrataClient, topic = "quiet"): Promise<PolledMessage[]> {
  const all: PolledMessage[] = [];
  let offset = 0;
  // Each poll answers at least one message until the end: bounded by the messages produced.
  for (let polls = 0; polls <= rounds * perRound; polls++) {
    const r = await client.poll("s", topic, 0, { offset, count: 100, maxBytes: 4 * 1024 * 1024 });
    if (r.messages.length === 0) break;
    all.push(...r.messages);
    offset = r.next_offset;
  }
  return all;
}

t.test("time-rolled segments are merged in the bucket and read back the same, before and after a SIGKILL", async (t) => {
  const dir = tempDir(t, "strata-merge-");
  const configPath = mergingConfig(dir, "500 ms", "2 s");
  const server = await spawnServer(["--config", configPath]);
  t.teardown(() => server.stop("SIGKILL"));
  const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  await createQuietTopic(client);
  for (let round = 0; round < rounds; round++) {
    t.equal(await produceRound(client, round * perRound), round * perRound);
  }
  const produced = await readAll(client);
  t.equal(produced.length, rounds * perRound);
  t.ok(
    produced.every((m) =>
      m.key === `key-${m.offset}` && Buffer.compare(m.payload!, payloadOf(m.offset)) === 0 &&
      new TextDecoder().decode(m.headers[0]!.value!) === String(m.offset)
    ),
    "every message as produced",
  );
  // Segments of about 100 kB: a run of them is merged once it holds half of segment_size (at least
  // six), into objects of at most segment_size (ten at most), while production goes on.
  await waitFor("the first run of segments to be merged", async () => {
    const first = (await segmentsOf(client))[0]!;
    return first.end_offset >= 6 * perRound - 1 && first.location === "remote";
  }, { deadlineMs: 60_000, pace: realTime(200) });
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const merges = Number(/strata_tier_merges_total\{outcome="merged"\} (\d+)/.exec(metrics)?.[1]);
  const replaced = Number(/strata_tier_segments_replaced_total (\d+)/.exec(metrics)?.[1]);
  t.ok(merges >= 1 && replaced >= 6 * merges, `${merges} merges replaced ${replaced} segments`);
  t.same(await readAll(client), produced, "read back the same after the merge");
  const view = (await client.partition("s", "quiet", 0)) as {
    merged_segments: number;
    small_remote_segments: number;
    segments: SegmentView[];
  };
  const remote = view.segments.filter((s) => s.location === "remote");
  t.equal(view.merged_segments, remote.filter((s) => s.end_offset - s.start_offset + 1 > perRound).length);
  t.ok(view.merged_segments >= 1, `${view.merged_segments} merged segments in the partition's view`);
  t.equal(view.small_remote_segments, remote.filter((s) => s.size_bytes < 512 * 1024).length);
  t.match(metrics, /strata_tier_partition_merged_segments\{partition="1\/1\/0"\} [1-9]/);
  const clusterId = /"cluster_id":"([0-9a-f]+)"/.exec(server.stderr())![1]!;
  const store = new FsObjectStore(new NodeDisk(), join(dir, "data", "objects"), new Rng(1));
  const listed = (await store.list(`strata/${clusterId}/1/1/0/`)).objects.map((o) => o.key);
  const first = (await segmentsOf(client))[0]!;
  const stem = (offset: number) => String(offset).padStart(20, "0");
  t.ok(
    listed.some((k) => k.endsWith(`/${stem(0)}-${stem(first.end_offset)}.log`)),
    "the merged object is in the bucket under its start and end offsets",
  );
  // The replaced objects go a grace (2 s here) after the manifest describes the merge.
  await waitFor("the replaced objects to be deleted", async () => {
    const keys = (await store.list(`strata/${clusterId}/1/1/0/`)).objects.map((o) => o.key);
    return !keys.some((k) => k.endsWith(`/${stem(perRound)}.log`) || k.endsWith(`/${stem(perRound)}.index`));
  }, { deadlineMs: 60_000, pace: realTime(200) });
  t.match(
    await (await fetch(`${server.baseUrl}/metrics`)).text(),
    /strata_housekeeping_deleted_objects_total\{reason="replaced"\} [1-9]/,
  );
  t.same(await readAll(client), produced, "read back the same once the replaced objects are gone");
  // The bucket describes the merged chain: a restore and a read replica read it all back.
  t.ok(await client.awaitTiered("s", "quiet", 0, rounds * perRound, 60_000), "every segment tiered");
  await waitFor("the manifest to describe the merge and the last segment", async () => {
    const m = (await store.list(`strata/${clusterId}/meta/1/1/0/`)).objects.find((o) =>
      o.key.endsWith("manifest.bin")
    );
    if (m === undefined) return false;
    const bytes = Buffer.concat(await store.getRange(m.key, 0, m.sizeBytes));
    const manifest = decodeManifest(new Uint8Array(bytes));
    return manifest.tieredUpToOffset === rounds * perRound && manifest.segments[0]?.merged === true;
  }, { deadlineMs: 60_000, pace: realTime(200) });
  const restored = await fetch(`${server.baseUrl}/admin/restore`, {
    method: "POST",
    body: JSON.stringify({ cluster_id: clusterId, stream: "s", topic: "quiet", as: "restored" }),
  });
  t.equal(restored.status, 201, await restored.text());
  t.same(await readAll(client, "restored"), produced, "a restore of the merged topic reads back the same");
  await client.createTopic("s", {
    name: "replica",
    read_replica_of: { cluster_id: clusterId, stream: "s", topic: "quiet" },
  });
  await waitFor("the read replica to plant every segment", async () => {
    return ((await client.partition("s", "replica", 0)) as { next_offset: number }).next_offset ===
      rounds * perRound;
  }, { deadlineMs: 60_000, pace: realTime(200) });
  t.same(
    await readAll(client, "replica"),
    produced,
    "a read replica of the merged topic reads back the same",
  );
  await server.stop("SIGKILL");
  const again = await spawnServer(["--config", configPath]);
  t.teardown(() => again.stop("SIGKILL"));
  const after = new StrataClient({ baseUrl: again.baseUrl, encoding: "msgpack" });
  t.ok((await segmentsOf(after))[0]!.end_offset >= first.end_offset, "the merged chain after a SIGKILL");
  t.same(await readAll(after), produced, "read back the same after a SIGKILL");
  t.equal(await again.stop("SIGTERM"), 0);
});
