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
  t.match(out, /strata transactional\s+produce/);
  t.match(out, /transactional_vs_plain\s+\d/);
  t.match(out, /read_committed_vs_uncommitted\s+\d/);
  const { null_broker, strata } = result;
  for (const run of [null_broker, strata.interval, strata.always, strata.idempotent, strata.transactional]) {
    t.ok(positive(run.produce.mb_s) && positive(run.consume.mb_s), "throughputs measured");
    t.ok(positive(run.produce.p99_ms) && run.produce.p99_ms >= run.produce.p50_ms, "produce p50 <= p99");
  }
  t.ok(positive(strata.transactional.consume_read_committed.mb_s), "read_committed measured");
  t.ok(
    strata.transactional.produce.transactions >= 4,
    "each producer committed at least its last transaction",
  );
  t.ok(positive(result.http.produce_mb_s) && positive(result.http.consume_mb_s), "the HTTP path measured");
  t.equal(result.settings.records_per_producer, 3000);
  t.same(Object.keys(result.targets), [
    "produce_vs_null",
    "consume_vs_null",
    "produce_vs_http",
    "consume_vs_http",
    "idempotent_vs_plain",
    "transactional_vs_plain",
    "read_committed_vs_uncommitted",
  ]);
  t.ok(result.ratios.transactional_vs_idempotent > 0, "the commits' cost alone, reported without a target");
});
