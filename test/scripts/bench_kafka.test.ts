import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp_dir.ts";
import { runDenoTask } from "../helpers/run_task.ts";

// `deno task bench:kafka --quick`: every phase runs and reports what the full run reports.
const clientMissing = spawnSync("/usr/bin/python3", ["-c", "import confluent_kafka"]).status !== 0;

t.test("bench:kafka --quick reports every server and the ratios", {
  skip: clientMissing ? "python3-confluent-kafka is not installed (.ci/run installs it)" : false,
}, async (t) => {
  const json = join(tempDir(t), "kafka.json");
  const { code, out, err } = await runDenoTask("bench:kafka", ["--quick", "--json", json]);
  t.equal(code, 0, `exit 0: ${err.slice(-2000)}`);
  t.match(out, /null broker\s+produce/);
  t.match(out, /strata fsync=interval\s+produce/);
  t.match(out, /produce_vs_null\s+\d/);
  const result = JSON.parse(readFileSync(json, "utf8"));
  const positive = (x: unknown) => typeof x === "number" && x > 0;
  t.match(out, /strata idempotent\s+produce/);
  t.match(out, /idempotent_vs_plain\s+\d/);
  for (
    const run of [result.null_broker, result.strata.interval, result.strata.always, result.strata.idempotent]
  ) {
    t.ok(positive(run.produce.mb_s) && positive(run.consume.mb_s), "throughputs measured");
    t.ok(positive(run.produce.p99_ms) && run.produce.p99_ms >= run.produce.p50_ms, "produce p50 <= p99");
  }
  t.ok(positive(result.http.produce_mb_s) && positive(result.http.consume_mb_s), "the HTTP path measured");
  t.equal(result.settings.records_per_producer, 3000);
  t.same(Object.keys(result.targets), [
    "produce_vs_null",
    "consume_vs_null",
    "produce_vs_http",
    "consume_vs_http",
    "idempotent_vs_plain",
  ]);
});
