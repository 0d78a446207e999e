import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp_dir.ts";
import { runDenoTask } from "../helpers/run_task.ts";

/** Whether a command is on the path. */
function installed(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const librdkafka = (() => {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import confluent_kafka"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

// The quick run end to end: every variant whose server and client are installed runs its produce
// and consume phases (a load whose records do not all read back fails the run), and the report has
// each figure the full run judges. The figures are the machine's; what is checked is that each was
// measured, and that a variant that could not run says why.
t.test(
  "bench:peers --quick measures Strata, NATS and RabbitMQ side by side",
  { timeout: 600_000 },
  async (t) => {
    const dir = tempDir(t, "strata-bench-peers-test-");
    const json = join(dir, "peers.json");
    const svg = join(dir, "peers.svg");
    const { code, out, err } = await runDenoTask("bench:peers", [
      "--quick",
      "--json",
      json,
      "--svg",
      svg,
      "--port-base",
      "31500",
    ]);
    t.equal(code, 0, err.slice(-3000));
    t.match(out, /server CPU s\/GB/, "the table is printed");
    const report = JSON.parse(readFileSync(json, "utf8"));
    t.match(report.settings, {
      quick: true,
      seconds: 2,
      rounds: 1,
      partitions: 4,
      producers: 8,
      payloadBytes: 1024,
    });
    const expected: [string, string, boolean][] = [
      ["page_cache", "strata", librdkafka],
      ["page_cache", "strata_kafkajs", true],
      ["durable", "strata", librdkafka],
      ["page_cache", "nats", installed("nats-server")],
      ["page_cache", "rabbitmq", existsSync("/usr/lib/rabbitmq/bin/rabbitmq-server")],
    ];
    for (const [mode, key, runs] of expected) {
      const s = report.modes[mode]?.[key];
      if (!runs) {
        t.match(
          report.skipped[`${mode}/${key}`],
          /not installed|not there/,
          `${mode}/${key} says why it was left out`,
        );
        continue;
      }
      t.ok(s !== undefined, `${mode}/${key} ran`);
      t.ok(
        s.produce_mb_s > 0 && s.consume_mb_s > 0,
        `${mode}/${key}: ${s.produce_mb_s} / ${s.consume_mb_s} MB/s`,
      );
      t.ok(
        s.produce_p99_ms >= s.produce_p50_ms && s.produce_p50_ms > 0,
        `acknowledged in ${s.produce_p50_ms} ms`,
      );
      t.ok(
        s.server_cpu_s_per_gb > 0 && s.peak_rss_mb > 0,
        `${s.server_cpu_s_per_gb} CPU s/GB, ${s.peak_rss_mb} MB`,
      );
    }
    const strata = report.modes.page_cache.strata_kafkajs;
    t.match(
      strata.tick_lateness_ms,
      { idle_p99: Number, produce_p99: Number },
      "Strata's tick at rest and under load",
    );
    // The targets are judged on librdkafka's figures beside a peer's.
    if (librdkafka && (installed("nats-server") || existsSync("/usr/lib/rabbitmq/bin/rabbitmq-server"))) {
      t.ok(report.targets.length >= 4, "the targets are judged");
    }
    t.match(readFileSync(svg, "utf8"), /<svg[\s\S]*MB\/s produce/, "the chart shows the throughputs");
  },
);
