import { rmSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { type PolledMessage, StrataClient } from "../../src/client/strata_client.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { createBucket, ourStore } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { type ClusterNodeProcess, partitionDirOf, startStrataCluster } from "../helpers/strata_cluster.ts";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";
import { payloadOf, perRound, produceRound, segmentsOf, type SegmentView } from "../helpers/quiet_topic.ts";

// A quiet tiered topic on three nodes rolls a segment a second; its leader merges the evicted ones
// in the bucket and commits the replace in etcd. Every replica takes it: a new leader serves
// everything, and a wiped replica takes the merged chain from the bucket.

const pace = realTime(100);
await initCrc32c();
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const rounds = 10;

function segmentsOn(node: ClusterNodeProcess): Promise<SegmentView[]> {
  return segmentsOf(new StrataClient({ baseUrl: node.httpUrl, encoding: "msgpack" }));
}

/** Every message from offset 0 on `node` (which leads), checked against what was produced. */
async function readBack(node: ClusterNodeProcess): Promise<{ read: number; bad: number }> {
  const client = new StrataClient({ baseUrl: node.httpUrl, encoding: "msgpack" });
  let read = 0;
  let bad = 0;
  // Each poll answers at least one message until the end: bounded by the messages produced.
  for (let polls = 0; polls <= rounds * perRound && read < rounds * perRound; polls++) {
    const polled = await client.poll("s", "quiet", 0, {
      offset: read,
      count: 100,
      maxBytes: 4 * 1024 * 1024,
    });
    if (polled.messages.length === 0) break;
    for (const m of polled.messages) {
      if (!intact(m, read)) bad++;
      read++;
    }
  }
  return { read, bad };
}

function intact(m: PolledMessage, offset: number): boolean {
  return m.offset === offset && m.key === `key-${offset}` &&
    Buffer.compare(m.payload!, payloadOf(offset)) === 0;
}

async function leaderOf(nodes: readonly ClusterNodeProcess[]): Promise<number> {
  const p = await describePartition(nodes.map((n) => n.kafka).join(","), "quiet", 0);
  return p?.leader ?? -1;
}

t.test(
  "a 3-node cluster's leader merges time-rolled segments; a new leader and a rebuilt replica read everything",
  { skip, timeout: 280_000 },
  async (t) => {
    const s3 = await startS3rver(t);
    await createBucket(s3, "strata-merge");
    const store = ourStore(s3, "strata-merge", { conditionalWrites: false });
    t.teardown(() => store.close());
    const cluster = await startStrataCluster(t, {
      portBase: 31_500,
      tiered: { store: s3, bucket: "strata-merge" },
      housekeeping: [
        'idle_timeout = "500 ms"',
        'merge_interval = "1 s"',
        'manifest_upload_interval = "1 s"',
        'delete_grace = "2 s"',
      ],
    });
    const client = new StrataClient({ baseUrl: cluster.nodes[0]!.httpUrl, encoding: "msgpack" });
    await client.createStream("s");
    await client.createTopic("s", {
      name: "quiet",
      partitions: 1,
      tiered: true,
      replication_factor: 3,
      segment_size: "1 MiB",
      segment_max_age: "1 s",
      local_retention_age: "1 s",
    });
    await waitFor("three replicas in sync", async () => {
      const p = await describePartition(cluster.bootstrap, "quiet", 0);
      return p !== null && p.leader > 0 && p.isr.length === 3;
    }, { deadlineMs: 20_000, pace });
    const leader = cluster.node(await leaderOf(cluster.nodes));
    const onLeader = new StrataClient({ baseUrl: leader.httpUrl, encoding: "msgpack" });
    for (let round = 0; round < rounds; round++) {
      t.equal(await produceRound(onLeader, round * perRound), round * perRound);
    }
    // A run of segments of about 100 kB is merged once it holds half of segment_size: six at least.
    await waitFor("the leader to merge a run of segments", async () => {
      const first = (await segmentsOn(leader))[0]!;
      return first.location === "remote" && first.end_offset >= 6 * perRound - 1;
    }, { deadlineMs: 60_000, pace });
    const merged = (await segmentsOn(leader))[0]!;
    t.comment(`the leader merged offsets 0 to ${merged.end_offset}`);
    const metrics = await (await fetch(`${leader.httpUrl}/metrics`)).text();
    t.match(metrics, /strata_tier_merges_total\{outcome="merged"\} [1-9]/);
    t.same(await readBack(leader), { read: rounds * perRound, bad: 0 }, "the leader reads everything back");
    // The replace is committed in etcd: every follower takes it once its own copies are evicted.
    for (const node of cluster.nodes.filter((n) => n !== leader)) {
      await waitFor(`node ${node.id} to take the merge`, async () => {
        const first = (await segmentsOn(node))[0]!;
        return first.location === "remote" && first.end_offset >= merged.end_offset;
      }, { deadlineMs: 30_000, pace });
      const segments = await segmentsOn(node);
      t.ok(
        segments.every((s, i) => i === 0 || s.start_offset === segments[i - 1]!.end_offset + 1),
        `node ${node.id}'s chain starts with the merge (0 to ${segments[0]!.end_offset}) and is gapless`,
      );
      const replaced = await (await fetch(`${node.httpUrl}/metrics`)).text();
      t.match(
        replaced,
        /strata_tier_segments_replaced_total [1-9]/,
        `node ${node.id} counts the segments replaced`,
      );
      t.match(replaced, /strata_tier_replaces_waiting \d+/, `node ${node.id} shows the replaces waiting`);
    }

    // Every replica took the replace: the leader deletes the objects it replaced, a grace later.
    const stem = (offset: number) => String(offset).padStart(20, "0");
    await waitFor("the replaced objects to be deleted", async () => {
      const keys = (await store.list("")).objects.map((o) => o.key);
      return keys.some((k) => k.endsWith(`/${stem(0)}-${stem(merged.end_offset)}.log`)) &&
        !keys.some((k) => k.endsWith(`/${stem(perRound)}.log`) || k.endsWith(`/${stem(perRound)}.index`));
    }, { deadlineMs: 60_000, pace });
    t.match(
      await (await fetch(`${leader.httpUrl}/metrics`)).text(),
      /strata_housekeeping_deleted_objects_total\{reason="replaced"\} [1-9]/,
      "the leader counts the replaced objects deleted",
    );
    t.same(
      await readBack(leader),
      { read: rounds * perRound, bad: 0 },
      "the leader reads everything back after",
    );

    // The leader goes: another replica, whose chain took the merge, leads and serves everything.
    await leader.signal("SIGKILL");
    const others = cluster.nodes.filter((n) => n !== leader);
    await waitFor("a new leader", async () => {
      const id = await leaderOf(others);
      return id > 0 && id !== leader.id;
    }, { deadlineMs: 15_000, pace });
    const second = cluster.node(await leaderOf(others));
    t.same(
      await readBack(second),
      { read: rounds * perRound, bad: 0 },
      "the new leader reads everything back",
    );

    // A replica wiped and started again takes the tiered part of its log from the bucket: the chain
    // through the merge's object. Alone, it leads and reads everything.
    const wiped = others.find((n) => n !== second)!;
    await wiped.signal("SIGKILL");
    rmSync(join(partitionDirOf(wiped), "../../../../../.."), { recursive: true, force: true });
    await wiped.restart();
    await waitFor("the wiped replica back in sync", async () => {
      const p = await describePartition(others.map((n) => n.kafka).join(","), "quiet", 0);
      return p !== null && p.isr.includes(wiped.id);
    }, { deadlineMs: 60_000, pace });
    const rebuilt = await segmentsOn(wiped);
    // The new leader may have merged its own chain meanwhile: the transfer takes the merge that
    // reaches back furthest.
    t.ok(
      rebuilt[0]!.start_offset === 0 && rebuilt[0]!.end_offset >= merged.end_offset &&
        rebuilt[0]!.location === "remote",
      `the rebuilt replica's chain starts with a merge's object (0 to ${rebuilt[0]!.end_offset})`,
    );
    await second.signal("SIGKILL");
    await waitFor("the rebuilt replica to lead", async () => (await leaderOf([wiped])) === wiped.id, {
      deadlineMs: 15_000,
      pace,
    });
    t.same(
      await readBack(wiped),
      { read: rounds * perRound, bad: 0 },
      "the rebuilt replica reads everything back",
    );
  },
);
