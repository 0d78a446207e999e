import { readFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { runDenoTask } from "../helpers/run_task.ts";

const positive = (x: unknown) => typeof x === "number" && x > 0;
const lateness = {
  p99_ms: Number,
  p99_bucket_upper_ms: Number,
  max_ms: Number,
  ticks: Number,
  missed_ticks: Number,
};

/**
 * Starts a server of its own on a run's data and checks what it lists and holds: the layout of 100
 * partitions (64 + 36) and the created topic, with one record in each partition of the layout.
 */
async function checkHostedByAFreshServer(t: Test, configPath: string): Promise<void> {
  const server = await spawnServer(["--config", configPath], {}, 120_000);
  t.teardown(() => server.stop("SIGKILL"));
  const client = new StrataClient({ baseUrl: server.baseUrl });
  const bench = (await client.listStreams()).find((s) => s["name"] === "bench") as { topics: unknown[] };
  const topics = bench.topics.map((topic) => {
    const { name, partitions } = topic as { name: string; partitions: number };
    return { name, partitions };
  }).sort((a, b) => a.name.localeCompare(b.name));
  t.same(topics, [
    { name: "created", partitions: 1024 },
    { name: "t0000", partitions: 64 },
    { name: "t0001", partitions: 36 },
  ]);
  const nextOffsets = await Promise.all(
    topics.filter((topic) => topic.name !== "created").flatMap((topic) =>
      Array.from({ length: topic.partitions }, (_, p) => client.partition("bench", topic.name, p))
    ),
  );
  t.same(new Set(nextOffsets.map((p) => p["next_offset"])), new Set([1]), "each partition holds one record");
  t.equal(nextOffsets.length, 100);
  t.equal(await server.stop("SIGTERM"), 0);
}

// The quick run end to end, on a layout whose last topic is smaller (64 + 36). The figures are the
// machine's; what is checked is that each was measured, and that the server really hosts the layout:
// a server started afterwards on the run's data lists its topics and every partition holds its record.
t.test("bench:partitions --quick measures every figure of a server hosting the asked partitions", {
  timeout: 600_000,
}, async (t) => {
  const dir = tempDir(t, "strata-bench-partitions-test-");
  const json = join(dir, "partitions.json");
  const { code, out, err } = await runDenoTask("bench:partitions", [
    "--quick",
    "--partitions",
    "100",
    "--json",
    json,
    "--dir",
    dir,
  ]);
  t.equal(code, 0, err.slice(-2000));
  t.match(out, /open descriptors/, "the table is printed");
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.match(report.settings, {
    quick: true,
    partitions: 100,
    partitions_per_topic: 64,
    topics: 2,
    idle_seconds: 2,
  });
  t.ok(
    report.timer_floor.cpu_percent_of_core >= 0 && report.timer_floor.cpu_percent_of_core < 100,
    `a bare timer's CPU: ${report.timer_floor.cpu_percent_of_core} % of a core`,
  );
  for (const idle of [report.baseline.idle, report.server.idle]) {
    t.match(idle, {
      tick_lateness_ms: lateness,
      cpu_percent_of_core: Number,
      scrape_ms: Number,
      scrape_hold_ms: Number,
    });
    t.ok(
      positive(idle.rss_mb) && positive(idle.open_fds),
      `RSS ${idle.rss_mb} MB, ${idle.open_fds} descriptors`,
    );
    // The thread can seem to outrun its process by a few 10 ms clock ticks, never more: each reading's
    // utime and stime are the kernel's split of the precise run time, each cut down to a whole tick for
    // the thread and for the process apart (under two ticks lost per reading, so under four over a
    // window), and the two files are read one after the other (one tick more). A quick run saw two.
    const tickPercent = 100 * 10 / (report.settings.idle_seconds * 1000);
    t.ok(
      idle.loop_thread_cpu_percent_of_core >= 0 &&
        idle.loop_thread_cpu_percent_of_core <= idle.cpu_percent_of_core + 5 * tickPercent + 0.01,
      `the loop's thread ran ${idle.loop_thread_cpu_percent_of_core} % of a core, the process ${idle.cpu_percent_of_core} %`,
    );
    const l = idle.tick_lateness_ms;
    // Two idle seconds at a 10 ms tick: about 200 ticks, fewer only if the loop was held.
    t.ok(l.ticks >= 50 && l.ticks <= 400, `${l.ticks} ticks in the idle window`);
    t.ok(l.max_ms >= l.p99_ms && l.p99_ms >= 0, `p99 ${l.p99_ms} ms, max ${l.max_ms} ms`);
  }
  t.ok(
    report.server.idle.open_fds > report.baseline.idle.open_fds,
    "100 partitions hold more descriptors than one",
  );
  t.equal(report.server.partitions_hosted, 100, "the server listed the 100 partitions asked for");
  const create = report.server.create_topic;
  t.equal(create.partitions, 1024);
  t.ok(positive(create.ms) && create.tick_lateness_ms.ticks > 0, `created in ${create.ms} ms`);
  t.ok(create.tick_lateness_ms.max_ms >= 0);
  const boot = report.server.boot_after_sigkill;
  t.ok(positive(boot.listening_ms) && boot.serving_ms >= boot.listening_ms, JSON.stringify(boot));
  t.equal(boot.partitions_hosted, 100, "after SIGKILL the layout is still hosted");
  t.equal(boot.partitions_hosted_all, 1124, "and so is the topic created during the run");
  t.equal(report.targets.length, 6, "every target evaluated");
  t.equal(report.targets.at(-1).pass, null, "the descriptor target is unjudged without --max-open-files");

  await checkHostedByAFreshServer(t, join(dir, "partitions", "config.toml"));
});

// Arguments out of range are refused by name before any server starts.
t.test("bench:partitions refuses a partition count it cannot lay out", async (t) => {
  const { code, err } = await runDenoTask("bench:partitions", ["--quick", "--partitions", "0"]);
  t.not(code, 0);
  t.match(err, /Cannot run the benchmark: --partitions must be an integer from 1 to 1048576, got 0/);
});
