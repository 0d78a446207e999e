import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { runDenoTask } from "../helpers/run_task.ts";

// `deno task bench:cluster --quick`: both phases run on etcd and three nodes, and report what the
// full run reports.
t.test("bench:cluster --quick measures acks=all against acks=1 and failovers", {
  skip: etcdUnavailableReason() ?? false,
  timeout: 240_000,
}, async (t) => {
  const json = join(tempDir(t), "cluster.json");
  const { code, err } = await runDenoTask("bench:cluster", ["--quick", "--json", json]);
  t.equal(code, 0, `exit 0: ${err.slice(-2000)}`);
  const result = JSON.parse(readFileSync(json, "utf8"));
  t.equal(result.records, 200);
  for (const phase of [result.acks_1, result.acks_all]) {
    t.ok(phase.p50_ms > 0 && phase.p99_ms >= phase.p50_ms, "latencies measured, p50 <= p99");
  }
  t.equal(result.failover_ms.kills, 2);
  t.ok(result.failover_ms.min > 0 && result.failover_ms.max >= result.failover_ms.min);
  // A failover can never beat the lease: the killed leader's lease has to expire first.
  t.ok(
    result.failover_ms.min >= result.lease_ttl_ms / 2,
    `failover at least half a lease: ${result.failover_ms.min} ms`,
  );
  t.ok(typeof result.leader_tick_lateness_ms.p99 === "number");
  t.same(Object.keys(result.targets), [
    "acks_all_p99_within_2x_acks_1",
    "failover_median_within_lease_plus_1s",
  ]);
});
