import { readdirSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { MissedDeadlineError, passTime, realTime, waitFor } from "../helpers/wait_for.ts";
import {
  createQuietTopic,
  mergingConfig,
  payloadOf,
  perRound,
  produceRound,
  segmentsOf,
  type SegmentView,
} from "../helpers/quiet_topic.ts";

// The real server, killed again and again while an idle shard merges a quiet topic's small
// segments: each kill comes a random 0 to 60 ms after a merge's staging file shows, or after a
// random time when none does (both drawn from a fixed seed). After every restart the chain is gapless from offset 0 and
// every record produced reads back as produced.

const kills = 3;
const roundsBetweenKills = 6;
const killWaitMaxMs = 3000;

async function readBack(client: StrataClient, produced: number): Promise<{ read: number; bad: number }> {
  let read = 0;
  let bad = 0;
  // Each poll answers at least one record until the end: bounded by the records produced.
  for (let polls = 0; polls <= produced && read < produced; polls++) {
    const r = await client.poll("s", "quiet", 0, { offset: read, count: 100, maxBytes: 4 * 1024 * 1024 });
    if (r.messages.length === 0) break;
    for (const m of r.messages) {
      const intact = m.offset === read && m.key === `key-${read}` &&
        Buffer.compare(m.payload!, payloadOf(read)) === 0;
      if (!intact) bad++;
      read++;
    }
  }
  return { read, bad };
}

function gapless(segments: readonly SegmentView[]): boolean {
  return segments[0]?.start_offset === 0 &&
    segments.every((s, i) => i === 0 || s.start_offset === segments[i - 1]!.end_offset + 1);
}

t.test(
  "SIGKILLs while merges run leave a gapless chain that reads back every record",
  { timeout: 240_000 },
  async (t) => {
    const dir = tempDir(t, "strata-merge-kill-");
    const configPath = mergingConfig(dir, "200 ms", "1 s");
    let server = await spawnServer(["--config", configPath]);
    t.teardown(() => server.stop("SIGKILL"));
    let client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
    await createQuietTopic(client);
    const partitionDir = join(dir, "data", "streams", "1", "topics", "1", "partitions", "0");
    const rng = new Rng(49);
    let produced = 0;
    let midMerge = 0;
    for (let kill = 0; kill < kills; kill++) {
      for (let round = 0; round < roundsBetweenKills; round++) {
        t.equal(await produceRound(client, produced), produced);
        produced += perRound;
      }
      try {
        await waitFor(
          "a merge's staging file",
          () => readdirSync(partitionDir).some((f) => f.endsWith(".merge.tmp")),
          {
            deadlineMs: rng.int(200, killWaitMaxMs),
            pace: realTime(1),
          },
        );
        midMerge++;
        // Somewhere in the merge: staging, the uploads, or the replace's commit.
        await passTime(rng.int(0, 60), realTime(1));
      } catch (error) {
        if (!(error instanceof MissedDeadlineError)) throw error;
      }
      await server.stop("SIGKILL");
      server = await spawnServer(["--config", configPath]);
      client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
      const segments = await segmentsOf(client);
      t.ok(gapless(segments), `after kill ${kill + 1} the chain is gapless (${segments.length} segments)`);
      t.same(
        await readBack(client, produced),
        { read: produced, bad: 0 },
        `after kill ${kill + 1} every record reads back`,
      );
    }
    t.comment(`${midMerge} of ${kills} kills came while a merge's staging file showed`);
    await waitFor("a merged segment in the chain", async () => {
      const first = (await segmentsOf(client))[0]!;
      return first.location === "remote" && first.end_offset >= 2 * perRound - 1;
    }, { deadlineMs: 30_000, pace: realTime(100) });
    t.same(
      await readBack(client, produced),
      { read: produced, bad: 0 },
      "every record reads back at the end",
    );
    t.equal(await server.stop("SIGTERM"), 0);
  },
);
