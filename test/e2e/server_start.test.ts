import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { getPriority, setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { writeRecordFile } from "../../src/runtime/disk/record_file.ts";
import { configCopy, shippedConfig } from "../helpers/config_copy.ts";
import { isalUnavailableReason } from "../helpers/isal.ts";
import { runServerExpectingFailure, spawnServer } from "../helpers/spawn_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

const shipped = shippedConfig;

t.test("deno run starts the server on a config copy; /metrics shows the tick lateness; SIGTERM exits 0", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  // A real server on the real clock: its first ticks come a few milliseconds after it listens. The
  // metrics are polled until they show one, for at most 10 s.
  const ticked = /strata_pump_tick_lateness_seconds_count\{shard="0"\} [1-9]\d*/;
  let metrics = "";
  await waitFor("the metrics to show a tick", async () => {
    metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    return ticked.test(metrics);
  }, { deadlineMs: 10_000, pace: realTime(20) });
  t.match(metrics, /strata_pump_tick_lateness_seconds_bucket\{le="0\.001",shard="0"\} \d+/);
  t.match(metrics, ticked, "ticks have fired");
  const health = await (await fetch(`${server.baseUrl}/health`)).json();
  t.equal(health.status, "ok");
  t.equal(await server.stop("SIGTERM"), 0, "graceful shutdown exits 0");
  t.match(server.stderr(), /"msg":"server closed"/);
});

t.test("a config file with an unknown key makes start-up fail with a message naming the key", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { code, stderr } = await runServerExpectingFailure([
    "--config",
    configCopy(dir, "\n[http]\nport = 1\n"),
  ]);
  t.equal(code, 2);
  // Duplicate [http] is a TOML error; use a fresh key in an existing table instead.
  t.match(stderr, /Cannot load config/);
  const bad = join(dir, "bad.toml");
  writeFileSync(bad, shipped.replace("[log]", "[log]\nverbosity = 3"));
  const second = await runServerExpectingFailure(["--config", bad]);
  t.equal(second.code, 2);
  t.match(second.stderr, /Cannot load config: \[log\] verbosity: unknown key/);
});

t.test('the server checksums with ISA-L\'s CRC32C by default, and [system] crc32c = "native" needs it', {
  skip: isalUnavailableReason() ?? false,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  t.match(server.stderr(), /"msg":"crc32c","engine":"native \(libisal\.so\.2\)"/);
  t.equal(await server.stop("SIGTERM"), 0);
  const missing = await runServerExpectingFailure(["--config", configCopy(dir)], {
    STRATA_SYSTEM_CRC32C: "native",
    STRATA_SYSTEM_CRC32C_LIBRARY: "libno-such-crc.so.9",
  });
  t.equal(missing.code, 2);
  t.match(
    missing.stderr,
    /Cannot load config: \[system\] crc32c: "native" but Cannot open the CRC32C library libno-such-crc\.so\.9/,
  );
  const fallback = await spawnServer(["--config", configCopy(dir)], {
    STRATA_SYSTEM_CRC32C_LIBRARY: "libno-such-crc.so.9",
  });
  t.teardown(() => fallback.stop("SIGKILL"));
  t.match(
    fallback.stderr(),
    /"level":"warn","msg":"CRC32C by WebAssembly: the native engine is unavailable"/,
  );
  t.match(fallback.stderr(), /"msg":"crc32c","engine":"wasm"/);
  t.equal(await fallback.stop("SIGTERM"), 0);
});

t.test("a missing config file and a bad environment override are refused by name", async (t) => {
  const missing = await runServerExpectingFailure(["--config", "/nonexistent/strata.toml"]);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /Cannot load config: \/nonexistent\/strata\.toml: no such file/);
  const badEnv = await runServerExpectingFailure([], { STRATA_HTTP_ADDRESS: "nowhere" });
  t.equal(badEnv.code, 2);
  t.match(badEnv.stderr, /STRATA_HTTP_ADDRESS \(\[http\] address\): expected "host:port"/);
});

t.test("SIGTERM the moment the server says it listens still shuts down gracefully with exit 0", async (t) => {
  const codes: (number | null)[] = [];
  for (let i = 0; i < 3; i++) {
    const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const server = await spawnServer(["--config", configCopy(dir)]);
    codes.push(await server.stop("SIGTERM"));
  }
  t.same(codes, [0, 0, 0]);
});

t.test("under Deno the external memory reserve costs no resident memory: 1 GiB against none", async (t) => {
  // The reserve only helps if its pages stay untouched; if Deno's allocator wrote them, the server
  // with 1 GiB reserved would be 1 GiB larger. Same config otherwise, RSS read from /metrics.
  const rssBytes = async (reserve: string) => {
    const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const server = await spawnServer(["--config", configCopy(dir)], {
      STRATA_SYSTEM_EXTERNAL_MEMORY_RESERVE: reserve,
    });
    t.teardown(() => server.stop("SIGKILL"));
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    await server.stop("SIGTERM");
    const match = /strata_process_resident_memory_bytes (\d+)/.exec(metrics);
    t.ok(match, "the RSS gauge is exported");
    return Number(match![1]);
  };
  const without = await rssBytes("0");
  const with1GiB = await rssBytes("1 GiB");
  const grownMiB = (with1GiB - without) / 1048576;
  t.ok(grownMiB < 64, `RSS with 1 GiB reserved is ${grownMiB.toFixed(1)} MiB above RSS without`);
});

t.test(
  "under Deno the server raises its loop's thread, leaves V8's helpers, and grows its descriptor table",
  {
    skip: process.platform !== "linux" && "thread priorities are read from Linux's /proc",
  },
  async (t) => {
    // Whether this process may raise a priority decides what the server may: try it on this thread.
    const own = getPriority(0);
    let privileged = true;
    try {
      setPriority(0, own - 1);
      setPriority(0, own);
    } catch {
      privileged = false;
    }
    const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const server = await spawnServer(["--config", configCopy(dir)]);
    t.teardown(() => server.stop("SIGKILL"));
    const pid = server.child.pid!;
    const threads = () =>
      readdirSync(`/proc/${pid}/task`).map((tid) => {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        // The nice value is field 19 of stat; the fields after the name start at field 3.
        return { tid: Number(tid), name, nice: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]) };
      });
    const loop = threads().find((th) => th.tid === pid)!;
    const helpers = threads().filter((th) => th.name.startsWith("V8 "));
    t.ok(
      helpers.every((h) => h.nice === own),
      `V8's helper threads keep ${own}: ${helpers.map((h) => h.nice)}`,
    );
    if (!privileged) {
      t.equal(loop.nice, own, "the loop keeps its inherited priority");
      t.match(server.stderr(), /Cannot set the event loop thread's nice value to -10/);
    } else {
      t.equal(loop.nice, -10, "the loop's thread runs at the configured -10");
      t.match(server.stderr(), /"msg":"loop thread priority","nice":-10/);
    }
    // The descriptor table was grown at start-up ([system] fd_table_reserve, 1024 by default).
    const fdSize = Number(/FDSize:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
    t.ok(fdSize >= 1024, `the descriptor table has ${fdSize} slots`);
    t.equal(await server.stop("SIGTERM"), 0);
  },
);

t.test("a data directory of the previous format stops start-up with exit 2, naming both versions", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-e2e-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const data = join(dir, "data");
  mkdirSync(data);
  await initCrc32c();
  await writeRecordFile(new NodeDisk(), data, "metadata.bin", "STRAMETA", {
    version: 1,
    clusterId: "c0ffee",
    nextStreamId: 1,
    streams: [],
  });
  const { code, stderr } = await runServerExpectingFailure(["--config", configCopy(dir)]);
  t.equal(code, 2);
  t.match(
    stderr,
    `Cannot read the data directory ${data}: it is in format version 1, this server reads format version 2`,
  );
});
