import type { Test } from "tap";
import { Kafka, logLevel } from "kafkajs";
import { Rng } from "../../../src/runtime/rng.ts";
import { kafkaAddressOf, kcat } from "./kcat.ts";
import { type RunningServer, spawnServer } from "../spawn_server.ts";
import { getsMade } from "../tiered_e2e.ts";
import { realTime, waitFor } from "../wait_for.ts";

/**
 * Produces 6000 lz4 records of 1 KiB with kcat into a tiered topic with a 1 MiB envelope, waits for
 * eviction, and reads them back with kcat from the beginning, before and after a SIGKILL and restart
 * of a server started with `args` and `env`.
 */
export async function kafkaTieredRoundTrip(
  t: Test,
  args: string[],
  env: Record<string, string> = {},
): Promise<void> {
  const first = await spawnServer(args, env);
  t.teardown(() => first.stop("SIGKILL"));
  const rng = new Rng(405);
  const lines = Array.from(
    { length: 6000 },
    (_, i) => `${i}:` + Array.from({ length: 1000 }, () => String.fromCharCode(97 + rng.int(0, 25))).join(""),
  );
  await createTiered(first);
  const produced = await kcat(
    ["-b", kafkaAddressOf(first.stderr()), "-P", "-t", "tiered", "-z", "lz4", "-X", "acks=-1"],
    lines.join("\n") + "\n",
    60_000,
  );
  t.equal(produced.code, 0, `produced: ${produced.stderr}`);
  const stats = await waitForEviction(first);
  t.ok(stats.remote > 4 * 1024 * 1024, `evicted: ${stats.remote} bytes remote, ${stats.local} local`);
  t.ok(stats.local < 3 * 1024 * 1024, "the local part is down to about the envelope");

  const readBack = async (server: RunningServer) => {
    const consumed = await kcat(
      [
        "-b",
        kafkaAddressOf(server.stderr()),
        "-C",
        "-t",
        "tiered",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%s\n",
      ],
      "",
      120_000,
    );
    if (consumed.code !== 0 || consumed.stderr !== "") {
      t.comment(`kcat: ${consumed.code} ${consumed.stderr.slice(0, 2000)}`);
    }
    return consumed.stdout.trimEnd().split("\n");
  };
  const before = await readBack(first);
  t.equal(before.length, lines.length, `${before.length} records read back`);
  t.ok(before.every((line, i) => line === lines[i]), "every record byte for byte, in order");
  t.ok(await getsMade(first.baseUrl) > 0, "the evicted part came from the object store");

  t.equal(await first.stop("SIGKILL"), null, "killed");
  const second = await spawnServer(args, env);
  t.teardown(() => second.stop("SIGKILL"));
  const after = await readBack(second);
  t.equal(after.length, lines.length, "all read back after the restart");
  t.ok(after.every((line, i) => line === lines[i]), "byte for byte after the restart");
  t.equal(await second.stop("SIGTERM"), 0);
}

/** The topic, through CreateTopics: remote.storage.enable, 1 MiB segment.bytes and local.retention.bytes. */
async function createTiered(server: RunningServer): Promise<void> {
  // Through CreateTopics, with KIP-405's names, as a Kafka user would.
  const kafka = new Kafka({
    clientId: "tiered",
    brokers: [kafkaAddressOf(server.stderr())],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [{
        topic: "tiered",
        numPartitions: 1,
        configEntries: [
          { name: "remote.storage.enable", value: "true" },
          { name: "segment.bytes", value: String(1024 * 1024) },
          { name: "local.retention.bytes", value: String(1024 * 1024) },
        ],
      }],
    });
    if (!created) throw new Error("Cannot create the topic: CreateTopics created nothing");
  } finally {
    await admin.disconnect();
  }
}

/** Waits, polling the partition's stats, until a remote part exists and the local part is small; 60 s at most. */
async function waitForEviction(server: RunningServer): Promise<{ remote: number; local: number }> {
  let stats = { remote: 0, local: Infinity };
  await waitFor("eviction down to about the envelope", async () => {
    const p = await (await fetch(`${server.baseUrl}/streams/kafka/topics/tiered/partitions/0`)).json();
    stats = { remote: p.remote_size_bytes, local: p.local_size_bytes };
    return stats.remote > 4 * 1024 * 1024 && stats.local < 3 * 1024 * 1024;
  }, { deadlineMs: 60_000, pace: realTime(100) });
  return stats;
}
