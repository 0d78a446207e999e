import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { join } from "node:path";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import t from "tap";
import { serverTask, serverTaskArgs, taskEnv } from "../../scripts/lib/server_task.ts";
import { configSchema } from "../../src/config/schema.ts";
import { sdk } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { runDenoTask } from "../helpers/run_task.ts";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { uploadAllWhole } from "../../scripts/lib/whole_upload.ts";
import { defaultRetryProfiles } from "../../src/objectstore/retry_policy.ts";
import { RetryingObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { writeWholeFile } from "../../src/runtime/disk/file_ops.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { SimDisk } from "../../src/sim/sim_disk.ts";

// The pump benchmark's smoke run: the script works end to end under Deno and its JSON report has
// every field docs/BENCHMARKS.md, "What the report holds", names. The targets are the benchmark's own business, never asserted here.
t.test("bench:pump --quick runs every phase and writes the JSON report and the SVG chart", {
  timeout: 900_000,
}, async (t) => {
  const dir = tempDir(t);
  const json = join(dir, "pump.json");
  const svg = join(dir, "pump.svg");
  const { code, out, err } = await runDenoTask("bench:pump", [
    "--quick",
    "--json",
    json,
    "--svg",
    svg,
    "--dir",
    dir,
  ]);
  t.equal(code, 0, err.slice(-2000));
  t.match(out, /tick lateness in ms; piece_ms/, "the table is printed");
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.match(report, {
    machine: { cpu: String, cpus: Number, deno: String },
    piece_ms: Number,
    copy_mb_s: Number,
    copy_buffered_mb_s: Number,
    copy_direct_mb_s: Number,
  });
  t.ok(
    report.piece_ms > 0 && report.copy_mb_s > 0,
    `piece_ms ${report.piece_ms}, copy_mb_s ${report.copy_mb_s}`,
  );
  t.equal(
    report.copy_mb_s,
    Math.max(report.copy_buffered_mb_s, report.copy_direct_mb_s),
    "the ceiling is the faster of the two copies",
  );
  for (const phase of ["idle", "produce", "upload", "storm", "whole"]) {
    const p = report.phases[phase];
    t.match(p, {
      tick_lateness_ms: { p50: Number, p99: Number, p999: Number, max: Number },
      missed_ticks: Number,
      upload_mb_s: Number,
      produce_latency_ms: { p50: Number, p99: Number },
      cold_poll_ms: { p50: Number, p99: Number },
      cold_polls: Number,
      rss_mb: Number,
      rss_start_mb: Number,
      full_gcs: Number,
      scavenges: Number,
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
  t.ok(
    report.phases.storm.cold_polls > 0,
    `the storm's polls are counted: ${report.phases.storm.cold_polls}`,
  );
  t.equal(report.phases.upload.cold_polls, 0, "no reader polls in the upload phase");
  // The whole phase's backlog goes up by the stand-in (scripts/lib/whole_upload.ts), not the server.
  t.ok(report.phases.whole.upload_mb_s > 0, "the stand-in uploaded the whole phase's backlog");
  t.ok(report.phases.whole.cold_polls > 0, "the readers read beside the stand-in");
  t.same(
    report.targets.map((target: { name: string }) => target.name).filter((name: string) =>
      name.startsWith("whole")
    ),
    ["whole max >= 20 x storm max"],
    "the whole phase is compared with the storm",
  );
  t.ok(
    report.phases.storm.scavenges > 0 && report.phases.storm.scavenge_pause_ms_max > 0,
    `the storm's collections are counted: ${report.phases.storm.scavenges} scavenges`,
  );
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
  // The loop's nice value is the configured one where the process may raise its priority, and what
  // it inherited (this test's own) where it may not.
  t.ok(
    [configSchema.system.loop_thread_nice.default, getPriority(0)].includes(report.settings.loop_thread_nice),
    `the loop ran at nice ${report.settings.loop_thread_nice}`,
  );
  const chart = readFileSync(svg, "utf8");
  t.match(chart, /^<svg/);
  for (const phase of ["idle", "produce", "upload", "storm", "whole"]) {
    t.match(chart, new RegExp(`>${phase}<`));
  }
});

// The whole phase's stand-in does what the server's uploads never do: it reads each file in one
// call and puts it whole, every file at once. What it stores must still be the files, with their
// CRC32s, or the phase would measure work the server does not stand for.
t.test("the stand-in uploads each file whole: one read of all of it, the object its bytes and CRC32", async (t) => {
  const clock = new VirtualClock();
  const sim = new SimObjectStore(clock, new Rng(1));
  const store = new RetryingObjectStore(sim, clock, new Rng(2), defaultRetryProfiles, {
    putMs: 90_000,
    getMs: 5000,
    otherMs: 30_000,
  }, null);
  const disk = new SimDisk(new Rng(3));
  await disk.mkdirp("/segments");
  const files = new Map([
    ["/segments/0.log", Uint8Array.from({ length: 3 * 1024 * 1024 + 17 }, (_, i) => (i * 7) & 0xff)],
    ["/segments/0.index", Uint8Array.from({ length: 96 }, (_, i) => i)],
  ]);
  for (const [path, bytes] of files) await writeWholeFile(disk, path, bytes);
  const reads: string[] = [];
  const readCountingDisk: Pick<Disk, "open"> = {
    open: async (path, options) => {
      const file = await disk.open(path, options);
      return {
        path: file.path,
        readAt: (buffer, position) => {
          reads.push(`${path} ${buffer.length} bytes at ${position}`);
          return file.readAt(buffer, position);
        },
        writeAt: (data, position) => file.writeAt(data, position),
        append: (data) => file.append(data),
        sizeBytes: () => file.sizeBytes(),
        truncate: (lengthBytes) => file.truncate(lengthBytes),
        sync: () => file.sync(),
        close: () => file.close(),
      };
    },
  };
  const uploads = [...files.keys()].map((path) => ({ path, key: `bench${path}` }));
  const uploaded = await uploadAllWhole(readCountingDisk, store, uploads, 1e12);
  t.equal(uploaded, 3 * 1024 * 1024 + 17 + 96, "every byte of both files");
  t.same(
    reads.sort(),
    ["/segments/0.index 96 bytes at 0", `/segments/0.log ${3 * 1024 * 1024 + 17} bytes at 0`],
    "one read of each file, all of it",
  );
  for (const { path, key } of uploads) {
    const object = sim.peek(key)!;
    // Buffer.compare, not t.same: tap compares a typed array element by element.
    t.equal(Buffer.compare(object.bytes, files.get(path)!), 0, `${key} holds ${path}`);
    t.equal(object.metadata["crc32"], String(crc32(files.get(path)!)), `${key} carries its CRC32`);
  }
});

// `--help` prints the usage, naming every phase, and starts nothing.
t.test("bench:pump --help prints the usage with every phase and exits 0", async (t) => {
  const { code, out } = await runDenoTask("bench:pump", ["--help"]);
  t.equal(code, 0);
  t.match(out, /^deno task bench:pump /);
  t.match(out, /--phases idle,produce,upload,storm,whole/);
});

// Cluster mode: the measured server is node 1 of three (etcd and two followers in processes of
// their own), leading a third of each topic's partitions, all of them with 3 replicas.
t.test("bench:pump --quick --cluster measures the leader of replicated, tiered topics", {
  skip: etcdUnavailableReason() ?? false,
  timeout: 900_000,
}, async (t) => {
  const dir = tempDir(t);
  const json = join(dir, "pump.json");
  const args = [
    "--quick",
    "--cluster",
    "--phases",
    "idle,storm",
    "--port-base",
    "27000",
    "--json",
    json,
    "--dir",
    dir,
  ];
  const { code, err } = await runDenoTask("bench:pump", args);
  t.equal(code, 0, err.slice(-2000));
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.equal(report.settings.cluster, true);
  t.same(Object.keys(report.phases), ["idle", "storm"]);
  const storm = report.phases.storm;
  t.ok(storm.tick_lateness_ms.max >= storm.tick_lateness_ms.p99, "the tick was measured");
  t.ok(storm.upload_mb_s > 0, "the leader uploaded the backlog");
  t.ok(storm.cold_polls > 0 && storm.produce_latency_ms.p50 > 0, "its readers and its producer ran");
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

// The benchmark measures the server as `deno task server` runs it: its task carries the server's
// environment and V8 flags (and `--expose-gc` for its own collection before the first phase).
t.test("bench:pump runs with the server task's environment and V8 flags", (t) => {
  const tasks = JSON.parse(readFileSync(new URL("../../deno.json", import.meta.url), "utf8")).tasks;
  const v8Flags = (args: string[]) =>
    args.filter((a) => a.startsWith("--v8-flags=")).flatMap((a) => a.slice("--v8-flags=".length).split(","));
  const serverFlags = v8Flags(serverTaskArgs());
  t.ok(serverFlags.length > 0, `the server task sets V8 flags: ${serverFlags.join(",")}`);
  const benchFlags = v8Flags(taskEnv(String(tasks["bench:pump"])).command);
  for (const flag of serverFlags) t.ok(benchFlags.includes(flag), `bench:pump passes ${flag}`);
  const serverEnv = serverTask().env;
  t.ok(
    Object.keys(serverEnv).length > 0,
    `the server task sets its environment: ${JSON.stringify(serverEnv)}`,
  );
  const benchEnv = taskEnv(String(tasks["bench:pump"])).env;
  t.same(benchEnv, serverEnv, "bench:pump sets the same environment");
  t.end();
});

// The benchmark's S3 mode end to end against s3rver, on a small backlog: it creates the bucket it is
// given, uploads and reads through the `s3` store, and leaves no segment or manifest behind. What it
// measures there is s3rver's speed, never asserted.
t.test("bench:pump --backend s3 runs every phase against a fresh bucket and cleans it up", {
  timeout: 900_000,
}, async (t) => {
  const e = await startS3rver(t);
  const dir = tempDir(t);
  const json = join(dir, "pump-s3.json");
  const bucket = "bench-pump-smoke";
  const { code, err } = await runDenoTask("bench:pump", [
    "--quick",
    "--backlog",
    "256 MiB",
    "--segment-size",
    "64 MiB",
    "--backend",
    "s3",
    "--endpoint",
    e.endpoint,
    "--bucket",
    bucket,
    "--json",
    json,
    "--dir",
    dir,
  ], { AWS_ACCESS_KEY_ID: e.accessKeyId, AWS_SECRET_ACCESS_KEY: e.secretAccessKey });
  t.equal(code, 0, err.slice(-2000));
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.equal(report.machine.backend, "s3");
  t.ok(report.phases.upload.upload_mb_s > 0, "the backlog uploaded to the bucket");
  t.ok(report.phases.storm.cold_poll_ms.p50 > 0, "the readers read evicted data back");
  const listed = await sdk(e).send(new ListObjectsV2Command({ Bucket: bucket }));
  const left = (listed.Contents ?? []).map((o) => o.Key!).filter((key) => /\.(log|index|bin)$/.test(key));
  t.same(left, [], "no segment or manifest is left in the bucket after the run");
});
