import { spawn } from "node:child_process";
import { once } from "node:events";
import t from "tap";
import { etcdUnavailableReason } from "../helpers/harnesses/etcd_harness.ts";
import { kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { runDenoTask } from "../helpers/run_task.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** The waits on the cluster: real time, checked every 50 ms. */
const pace = realTime(50);
t.test("deno task cluster starts etcd and three nodes, prints where they are, and stops them on SIGINT", {
  skip: etcdUnavailableReason() ?? kcatUnavailable() ?? false,
  timeout: 120_000,
}, async (t) => {
  const dir = tempDir(t, "strata-cluster-task-");
  const child = spawn("deno", [
    "run",
    "--allow-all",
    "scripts/cluster.ts",
    "--dir",
    dir,
    "--port-base",
    "26500",
  ], {
    cwd: new URL("../..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  t.teardown(() => child.exitCode === null && child.kill("SIGKILL"));
  await waitFor("the task to print the bootstrap servers", () => /bootstrap: (\S+)/.test(out), {
    deadlineMs: 30_000,
    pace,
  });
  const bootstrap = /bootstrap: (\S+)/.exec(out)![1]!;
  t.equal(bootstrap, "127.0.0.1:26531,127.0.0.1:26532,127.0.0.1:26533");
  t.match(out, /node 2: +http:\/\/127\.0\.0\.1:26522/);
  await waitFor("three brokers in the metadata", async () => {
    const listed = await kcat(["-L", "-b", bootstrap, "-m", "3"], "", 10_000);
    return /3 brokers/.test(listed.stdout);
  }, { deadlineMs: 30_000, pace });
  const exited = once(child, "exit");
  child.kill("SIGINT");
  const [code] = await exited;
  t.equal(code, 0);
  t.match(out, /stopped/);
  const listed = await kcat(["-L", "-b", bootstrap, "-m", "2"], "", 10_000);
  t.not(listed.code, 0, "nothing serves once stopped");
});

t.test("deno task cluster refuses a bad option with its usage", async (t) => {
  const run = await runDenoTask("cluster", ["--nodes", "12"]);
  t.equal(run.code, 2);
  t.match(run.err, /--nodes must be an integer from 1 to 9/);
  t.match(run.err, /usage: deno task cluster/);
});
