import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { runDenoTask } from "../helpers/run_task.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// `deno task faults --quick`: a seeded schedule of faults against etcd and three real nodes, with
// real producers and consumers, judged by the history checker. A run with a new seed each time.
t.test("faults --quick: a seeded campaign finds a valid history, and names its seed", {
  skip: etcdUnavailableReason() ?? kcatUnavailable() ?? false,
  timeout: 300_000,
}, async (t) => {
  const seed = Math.floor(Math.random() * 0x1_0000_0000);
  const json = join(tempDir(t), "faults.json");
  const args = ["--quick", "--seed", String(seed), "--port-base", "28000", "--json", json];
  const { code, out, err } = await runDenoTask("faults", args);
  t.equal(out.split("\n")[0], `seed ${seed}`, "the seed comes first");
  t.equal(code, 0, `seed ${seed}: exit 0: ${err.slice(-3000)}`);
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.equal(report.seed, seed);
  t.equal(report.replay, `deno task faults --seed ${seed} --duration-s 20`);
  t.same(report.anomalies, [], "no anomaly");
  t.same(report.divergent_segments, [], "the replicas hold the same bytes");
  t.equal(report.valid, true);
  const ran = report.faults.filter((f: { skipped: string | null }) => f.skipped === null);
  t.ok(ran.length >= 1, `${ran.length} faults ran: ${ran.map((f: { kind: string }) => f.kind).join(", ")}`);
  const { acked, final, polled } = report.counts;
  t.ok(acked > 100, `${acked} acknowledged`);
  t.ok(final >= acked, `the final log (${final}) holds at least the acknowledged`);
  t.ok(polled > 0, `${polled} polled`);
});

t.test("faults --quick --tiered: the same over a tiered topic, and what tiering left is checked too", {
  skip: etcdUnavailableReason() ?? kcatUnavailable() ?? false,
  timeout: 300_000,
}, async (t) => {
  const seed = Math.floor(Math.random() * 0x1_0000_0000);
  const json = join(tempDir(t), "faults.json");
  const args = ["--quick", "--tiered", "--seed", String(seed), "--port-base", "28100", "--json", json];
  const { code, err } = await runDenoTask("faults", args);
  t.equal(code, 0, `seed ${seed}: exit 0: ${err.slice(-3000)}`);
  const report = JSON.parse(readFileSync(json, "utf8"));
  t.equal(report.replay, `deno task faults --seed ${seed} --duration-s 20 --tiered`);
  t.same(report.anomalies, [], "no anomaly");
  const tiering = report.tiering;
  t.equal(tiering.floorCaughtUp, true, "the floor reached the last sealed segment");
  t.ok(
    tiering.floor > 0 && tiering.segmentsBelowFloor >= 1,
    `floor ${tiering.floor}, ${tiering.segmentsBelowFloor} segments below`,
  );
  t.same([tiering.markersAboveFloor, tiering.missingObjects, tiering.extraObjects], [[], [], []]);
  t.equal(tiering.logObjects >= tiering.segmentsBelowFloor, true, `${tiering.logObjects} .log objects`);
});

t.test("faults refuses a bad option, with the usage", async (t) => {
  const { code, err } = await runDenoTask("faults", ["--duration-s", "1"]);
  t.equal(code, 2);
  t.match(err, /--duration-s must be from 5 to 3600/);
  t.match(err, /usage: deno task faults/);
});
