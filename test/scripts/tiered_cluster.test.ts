import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { runDenoTask } from "../helpers/run_task.ts";
import { tempDir } from "../helpers/temp_dir.ts";

// `deno task tiered-cluster --quick`: etcd, s3rver and three real nodes; the leader killed while it
// uploads; the floor, the envelopes, the bucket, kcat's read-back, the dead incarnation's sweep and
// a rebuild by state transfer, each checked by the script and read here from its report.
t.test("tiered-cluster --quick: every check of tiering across replicas holds", {
  skip: etcdUnavailableReason() ?? kcatUnavailable() ?? false,
  timeout: 300_000,
}, async (t) => {
  const json = join(tempDir(t), "tiered-cluster.json");
  const { code, err } = await runDenoTask("tiered-cluster", [
    "--quick",
    "--port-base",
    "26000",
    "--json",
    json,
  ]);
  t.equal(code, 0, `exit 0: ${err.slice(-3000)}`);
  const report = JSON.parse(readFileSync(json, "utf8"));
  for (const [check, held] of Object.entries(report.checks)) t.equal(held, true, check);
  t.equal(
    report.tiering.logObjects,
    report.tiering.segmentsBelowFloor,
    "one .log object per segment below the floor",
  );
  t.ok(report.tiering.segmentsBelowFloor >= 20, `${report.tiering.segmentsBelowFloor} segments tiered`);
  t.ok(report.load.floorAtKill < report.floor, "the floor rose past where the killed leader left it");
  t.not(report.load.newLeader, report.load.killed, "another node led after the kill");
  const { transferredBytes, copiedBytes, logBytes, localPartBytes } = report.rebuilt;
  t.ok(transferredBytes >= 20 * 1024 * 1024, `${transferredBytes} bytes came by state transfer`);
  t.ok(localPartBytes > 0, "the active segment held records the bucket has not");
  t.ok(
    copiedBytes <= localPartBytes + 1024 * 1024,
    `${copiedBytes} of ${logBytes} bytes copied from the leader`,
  );
  t.equal(report.cold.records, report.records, "the rebuilt node, alone, serves every record");
});
