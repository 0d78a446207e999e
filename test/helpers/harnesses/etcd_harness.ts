import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";

const script = new URL("../../../scripts/etcd-cluster.sh", import.meta.url).pathname;

/** Why etcd cannot run here, or null when its package is installed. */
export function etcdUnavailableReason(): string | null {
  const found = spawnSync("sh", ["-c", "command -v etcd && command -v curl"], { encoding: "utf8" });
  return found.status === 0
    ? null
    : "etcd is not installed (apt-get install etcd-server curl; .ci/run does this)";
}

/** A running 3-member etcd cluster on loopback, with its members' client URLs. */
export interface EtcdCluster {
  endpoints: string[];
  /** SIGKILLs member `n` (1 to 3). */
  kill(n: number): void;
  /** Restarts member `n` on its data directory. */
  restart(n: number): void;
}

/**
 * Starts a throw-away 3-member etcd with scripts/etcd-cluster.sh (about 0.3 to 0.6 s) on client
 * ports `portBase + 1..3` and peer ports `portBase + 11..13`, and stops and wipes it when the test
 * ends. Test files that run at once need different port bases.
 */
export function startEtcd(t: Test, portBase: number): EtcdCluster {
  const dir = join(mkdtempSync(join(tmpdir(), "strata-etcd-")), "cluster");
  const run = (...args: string[]) =>
    spawnSync("bash", [script, ...args], { encoding: "utf8", timeout: 60_000 });
  t.teardown(() => {
    run("stop", dir, String(portBase));
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });
  const started = run("start", dir, String(portBase));
  if (started.status !== 0) throw new Error(`etcd did not start: ${started.stdout}\n${started.stderr}`);
  const endpoints = /endpoints=(\S+)/.exec(started.stdout)?.[1]?.split(",") ?? [];
  if (endpoints.length !== 3) throw new Error(`etcd printed no endpoints: ${started.stdout}`);
  return {
    endpoints,
    kill: (n) => {
      const killed = run("kill1", String(n), dir, String(portBase));
      if (killed.status !== 0) throw new Error(`Cannot kill etcd member ${n}: ${killed.stderr}`);
    },
    restart: (n) => {
      const restarted = run("start1", String(n), dir, String(portBase));
      if (restarted.status !== 0) throw new Error(`Cannot restart etcd member ${n}: ${restarted.stderr}`);
    },
  };
}
