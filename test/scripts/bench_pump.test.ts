import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { serverTaskArgs } from "../../scripts/lib/server_task.ts";
import { configSchema } from "../../src/config/schema.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// The pump benchmark's smoke run: the script works end to end under Deno and its JSON report has
// every field the issue names. The targets are the benchmark's own business, never asserted here.
t.test("bench:pump --quick runs every phase and writes the JSON report and the SVG chart", {
  timeout: 900_000,
}, async (t) => {
  const dir = tempDir(t);
  const json = join(dir, "pump.json");
  const svg = join(dir, "pump.svg");
  const child = spawn("deno", [
    "task",
    "--quiet",
    "bench:pump",
    "--quick",
    "--json",
    json,
    "--svg",
    svg,
    "--dir",
    dir,
  ], {
    cwd: new URL("../..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const [code] = await once(child, "exit");
  t.equal(code, 0, err.slice(-2000));
  t.match(out, /tick lateness in ms; piece_ms/, "the table is printed");
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.match(report, {
    machine: { cpu: String, cpus: Number, deno: String },
    piece_ms: Number,
    copy_mb_s: Number,
  });
  t.ok(
    report.piece_ms > 0 && report.copy_mb_s > 0,
    `piece_ms ${report.piece_ms}, copy_mb_s ${report.copy_mb_s}`,
  );
  for (const phase of ["idle", "produce", "upload", "storm", "naive"]) {
    const p = report.phases[phase];
    t.match(p, {
      tick_lateness_ms: { p50: Number, p99: Number, p999: Number, max: Number },
      missed_ticks: Number,
      upload_mb_s: Number,
      produce_latency_ms: { p50: Number, p99: Number },
      cold_poll_ms: { p50: Number, p99: Number },
      rss_mb: Number,
      rss_start_mb: Number,
    }, `phase ${phase} has every field`);
    t.ok(
      p.tick_lateness_ms.max >= p.tick_lateness_ms.p99 && p.tick_lateness_ms.p99 >= p.tick_lateness_ms.p50,
    );
    if (process.platform === "linux") {
      t.ok(
        p.loop_cpu_ms_per_s > 0 && p.loop_cpu_ms_per_s <= 1000 && p.loop_wait_ms_per_s >= 0,
        `phase ${phase}: the loop ran ${p.loop_cpu_ms_per_s} and waited ${p.loop_wait_ms_per_s} ms/s`,
      );
    }
  }
  // Each phase's topics are deleted with their objects, so a full run fits a test store.
  const leftInStore = readdirSync(join(dir, "data"), { recursive: true, encoding: "utf8" })
    .filter((path) => path.includes("objects") && /\.(log|index|bin)$/.test(path));
  t.same(leftInStore, [], "no segment or manifest is left in the store after the run");
  t.ok(report.phases.produce.produce_latency_ms.p50 > 0, "the producer ran");
  t.ok(report.phases.upload.upload_mb_s > 0, "the backlog uploaded");
  t.ok(report.phases.storm.cold_poll_ms.p50 > 0, "the readers read");
  t.equal(report.targets.length, 6, "every target evaluated");
  // A run without the tuning options measures the server as shipped, not defaults of the script's own.
  const tiered = configSchema.tiered_storage;
  t.same(report.settings, {
    ...report.settings,
    upload_piece_size: tiered.upload_piece_size.default,
    upload_concurrency: tiered.upload_concurrency.default,
    fetch_concurrency: tiered.fetch_concurrency.default,
    chunk_size: configSchema["tiered_storage.cache"].chunk_size.default,
  }, "the tuning settings are the server's defaults");
  const chart = readFileSync(svg, "utf8");
  t.match(chart, /^<svg/);
  for (const phase of ["idle", "produce", "upload", "storm", "naive"]) {
    t.match(chart, new RegExp(`>${phase}<`));
  }
});

// The idle phase's RSS is meant to be the server at rest, which needs a full collection after the
// setup's probe; without V8's gc exposed the script says so at once instead of measuring leftovers.
t.test("bench:pump refuses to run without --expose-gc, naming the flag", async (t) => {
  const child = spawn("deno", ["run", "--allow-all", "scripts/bench-pump.ts", "--quick"], {
    cwd: new URL("../..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  const [code] = await once(child, "exit");
  t.not(code, 0, "the run fails");
  t.match(err, /Cannot run the benchmark: it needs --v8-flags=--expose-gc/);
});

// The benchmark measures the server as `deno task server` runs it: its task carries the server's V8
// flags (and `--expose-gc` for its own collection before the first phase).
t.test("bench:pump runs with the server task's V8 flags", (t) => {
  const tasks = JSON.parse(readFileSync(new URL("../../deno.json", import.meta.url), "utf8")).tasks;
  const v8Flags = (args: string[]) =>
    args.filter((a) => a.startsWith("--v8-flags=")).flatMap((a) => a.slice("--v8-flags=".length).split(","));
  const serverFlags = v8Flags(serverTaskArgs());
  t.ok(serverFlags.length > 0, `the server task sets V8 flags: ${serverFlags.join(",")}`);
  const benchFlags = v8Flags(String(tasks["bench:pump"]).split(/\s+/));
  for (const flag of serverFlags) t.ok(benchFlags.includes(flag), `bench:pump passes ${flag}`);
  t.end();
});
