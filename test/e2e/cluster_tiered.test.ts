import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { createBucket, ourStore } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { type ClusterNodeProcess, partitionDirOf, startStrataCluster } from "../helpers/strata_cluster.ts";
import { describePartition } from "../../scripts/lib/kafka_metadata.ts";
import { payloadOf } from "../helpers/tiered_e2e.ts";
import { tableMarkersIn } from "../helpers/remote_table_file.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
await initCrc32c();
const skip = etcdUnavailableReason() ?? kcatUnavailable() ?? false;
const mib = 1024 * 1024;
const segmentBytes = 1 * mib;
const envelopeBytes = 4 * mib;
/** 64 KiB messages (`payloadOf`), 16 to a request. */
const perRequest = 16;

/** Local `.log` bytes and the remote table's markers of the tiered topic's partition on `node`. */
function localState(node: ClusterNodeProcess) {
  const dir = partitionDirOf(node);
  const names = readdirSync(dir);
  const logBytes = names.filter((n) => n.endsWith(".log"))
    .reduce((n, f) => n + (statSync(`${dir}/${f}`, { throwIfNoEntry: false })?.size ?? 0), 0);
  const markers = tableMarkersIn(dir);
  return { dir, logBytes, markers };
}

async function produce(client: StrataClient, from: number, count: number): Promise<void> {
  for (let offset = from; offset < from + count; offset += perRequest) {
    const batch = Array.from({ length: perRequest }, (_, i) => ({ payload: payloadOf(offset + i) }));
    const r = await client.produce("kafka", "tiered", batch, 0);
    if (r.base_offset !== offset) throw new Error(`produced at ${r.base_offset}, expected ${offset}`);
  }
}

t.test(
  "tiering across a 3-node cluster: the leader uploads, every replica evicts, a new leader carries on",
  { skip, timeout: 280_000 },
  async (t) => {
    const s3 = await startS3rver(t);
    await createBucket(s3, "strata-cluster");
    const store = ourStore(s3, "strata-cluster", { conditionalWrites: false });
    t.teardown(() => store.close());
    const cluster = await startStrataCluster(t, {
      portBase: 25_500,
      // Paced, so that the leader can be killed while an upload is under way.
      tiered: { store: s3, bucket: "strata-cluster", uploadBandwidth: "4 MiB" },
      // One object per segment is counted below: a merge of the small segments a failover seals is not.
      housekeeping: ["merge_segments = false"],
    });
    const client = new StrataClient({ baseUrl: cluster.nodes[0]!.httpUrl, encoding: "msgpack" });
    await client.createStream("kafka");
    await client.createTopic("kafka", {
      name: "tiered",
      partitions: 1,
      tiered: true,
      replication_factor: 3,
      segment_size: segmentBytes,
      local_retention_size: envelopeBytes,
    });
    await waitFor("three replicas in sync", async () => {
      const p = await describePartition(cluster.bootstrap, "tiered", 0);
      return p !== null && p.leader > 0 && p.isr.length === 3;
    }, { deadlineMs: 20_000, pace });

    // 16 MiB: 16 sealed segments or so; the leader uploads them, every replica evicts below the floor.
    await produce(client, 0, 256);
    const first = (await describePartition(cluster.bootstrap, "tiered", 0))!;
    const stats = await client.partition("kafka", "tiered", 0) as {
      segments: { end_offset: number; sealed: boolean }[];
    };
    const sealedEnd = stats.segments.filter((s) => s.sealed).at(-1)!.end_offset;
    t.ok(
      await client.awaitTiered("kafka", "tiered", 0, sealedEnd + 1, 60_000),
      `the floor passed ${sealedEnd}`,
    );
    const spent = await waitFor(
      "every replica to evict down to its envelope",
      () =>
        cluster.nodes.every((n) => {
          const local = localState(n);
          return local.markers.length > 0 && local.logBytes <= envelopeBytes + 2 * segmentBytes;
        }),
      { deadlineMs: 30_000, pace },
    );
    t.comment(`every replica evicted within ${spent} ms of the floor`);
    for (const node of cluster.nodes) {
      const local = localState(node);
      t.ok(
        local.markers.length >= 8,
        `node ${node.id}: ${local.markers.length} segments evicted, ${local.logBytes} bytes local`,
      );
    }
    // Followers never upload: every object's key names the partition's one revision, written once.
    const revision = localState(cluster.node(first.leader)).markers[0]!.createdRevision;
    for (const node of cluster.nodes) {
      const theirs = localState(node).markers[0]!.createdRevision;
      t.equal(theirs, revision, `node ${node.id}'s markers name the same incarnation`);
    }

    // 8 MiB more to the leader, which is killed while it uploads them: another replica leads,
    // produces go on, and the floor goes on rising under it.
    await produce(client, 256, 128);
    const leaderUrl = cluster.node(first.leader).httpUrl;
    const uploading = () =>
      fetch(`${leaderUrl}/metrics`).then((r) => r.text()).then((m) =>
        /^strata_tier_uploads_in_flight [1-9]/m.test(m)
      );
    await waitFor("the leader to be uploading", uploading, { deadlineMs: 20_000, pace });
    const floorAtKill = (await client.partition("kafka", "tiered", 0) as { tiered_up_to_offset: number })
      .tiered_up_to_offset;
    await cluster.node(first.leader).signal("SIGKILL");
    t.comment(`killed with an upload in flight, its floor at ${floorAtKill}`);
    const others = cluster.nodes.filter((n) => n.id !== first.leader);
    const elsewhere = new StrataClient({ baseUrl: others[0]!.httpUrl, encoding: "msgpack" });
    await waitFor("a new leader", async () => {
      const p = await describePartition(others.map((n) => n.kafka).join(","), "tiered", 0);
      return p !== null && p.leader > 0 && p.leader !== first.leader;
    }, { deadlineMs: 15_000, pace });
    await produce(elsewhere, 384, 64);
    const after = await elsewhere.partition("kafka", "tiered", 0) as {
      segments: { end_offset: number; sealed: boolean }[];
    };
    const sealedAfter = after.segments.filter((s) => s.sealed).at(-1)!.end_offset;
    t.ok(sealedAfter > sealedEnd, "more sealed segments under the new leader");
    t.ok(
      await elsewhere.awaitTiered("kafka", "tiered", 0, sealedAfter + 1, 60_000),
      `the new leader's floor passed ${sealedAfter}`,
    );

    // One .log object per sealed segment below the floor, whichever leader uploaded it.
    const clusterId = /"cluster_id":"([0-9a-f]+)"/.exec(others[0]!.server!.stderr())![1]!;
    const listed = [];
    let next: string | null = null;
    do {
      const page = await store.list(
        `strata/${clusterId}/1/1/0/${revision}-0/`,
        next === null ? {} : { startAfter: next },
      );
      listed.push(...page.objects);
      next = page.nextStartAfter;
    } while (next !== null);
    const logs = listed.filter((o) => o.key.endsWith(".log")).length;
    t.equal(
      logs,
      after.segments.filter((s) => s.sealed).length,
      `${logs} .log objects, one per sealed segment`,
    );

    // Everything reads back from offset 0 on the new leader, the evicted part through its cache.
    let offset = 0;
    let bad = 0;
    while (offset < 448) {
      const polled = await elsewhere.poll("kafka", "tiered", 0, { offset, count: 32 });
      for (const m of polled.messages) {
        if (
          m.offset !== offset || Buffer.compare(Buffer.from(m.payload!), Buffer.from(payloadOf(offset))) !== 0
        ) {
          bad++;
        }
        offset++;
      }
      if (polled.messages.length === 0) break;
    }
    t.same({ read: offset, bad }, { read: 448, bad: 0 }, "all 448 messages read back, byte for byte");

    // A follower wiped and started again takes the tiered part of its log from the bucket's
    // metadata (state transfer) and copies only the rest from its leader; it rejoins the in-sync
    // set and keeps within its envelope; alone, it then leads and serves everything, cold reads
    // included.
    const leaderNow = (await describePartition(others.map((n) => n.kafka).join(","), "tiered", 0))!.leader;
    const wiped = others.find((n) => n.id !== leaderNow)!;
    await wiped.signal("SIGKILL");
    rmSync(join(partitionDirOf(wiped), "../../../../../.."), { recursive: true, force: true });
    await wiped.restart();
    const rejoinedMs = await waitFor("the wiped follower back in sync", async () => {
      const p = await describePartition(others.map((n) => n.kafka).join(","), "tiered", 0);
      return p !== null && p.isr.includes(wiped.id);
    }, { deadlineMs: 60_000, pace });
    await waitFor("the wiped follower to evict to its envelope", () => {
      const local = localState(wiped);
      return local.markers.length >= 8 && local.logBytes <= envelopeBytes + 2 * segmentBytes;
    }, { deadlineMs: 30_000, pace });
    t.comment(`the wiped follower was back in sync ${rejoinedMs} ms after its restart`);
    const metrics = await fetch(`${wiped.httpUrl}/metrics`).then((r) => r.text());
    const counter = (name: string) => Number(new RegExp(`^${name} (\\d+)`, "m").exec(metrics)?.[1] ?? NaN);
    const transferred = counter("strata_tier_state_transfer_bytes_total");
    const copied = counter("strata_cluster_replica_fetched_bytes_total");
    const totalBytes =
      (await elsewhere.partition("kafka", "tiered", 0) as { segments: { size_bytes: number }[] })
        .segments.reduce((n, s) => n + s.size_bytes, 0);
    t.comment(
      `rebuilt: ${transferred} bytes taken from the bucket's metadata, ${copied} copied, of ${totalBytes}`,
    );
    t.ok(transferred >= totalBytes / 2, "most of the log came by state transfer, not from a peer");
    t.ok(copied <= totalBytes - transferred + segmentBytes, "only the part above the floor was copied");
    await cluster.node(leaderNow).signal("SIGKILL");
    await waitFor("the rebuilt node to lead", async () => {
      const p = await describePartition(wiped.kafka, "tiered", 0);
      return p !== null && p.leader === wiped.id;
    }, { deadlineMs: 15_000, pace });
    const rebuilt = new StrataClient({ baseUrl: wiped.httpUrl, encoding: "msgpack" });
    let read = 0;
    let wrong = 0;
    while (read < 448) {
      const polled = await rebuilt.poll("kafka", "tiered", 0, { offset: read, count: 32 });
      if (polled.messages.length === 0) break;
      for (const m of polled.messages) {
        if (
          m.offset !== read || Buffer.compare(Buffer.from(m.payload!), Buffer.from(payloadOf(read))) !== 0
        ) wrong++;
        read++;
      }
    }
    t.same({ read, wrong }, { read: 448, wrong: 0 }, "the rebuilt node serves all 448 as leader");
  },
);
