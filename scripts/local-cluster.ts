import { parseArgs } from "node:util";
import { etcdInstalled, startLocalCluster } from "./lib/local_cluster.ts";

/**
 * A local cluster for runs by hand and for suites that need one (librdkafka's, with
 * `LIBRDKAFKA_SUITE_NODES=3`): etcd (three members) and `--nodes` Strata nodes on ports from
 * `--port-base`, their data under `--dir`.
 *
 *   deno run -A scripts/local-cluster.ts --dir DIR [--port-base 27000] [--nodes 3]
 *
 * Prints `bootstrap=HOST:PORT,...` once every node listens, and runs until SIGTERM or SIGINT, when
 * it stops the nodes and etcd. The nodes take `STRATA_*` settings from the environment.
 */
const { values } = parseArgs({
  args: Deno.args,
  options: {
    "dir": { type: "string" },
    "port-base": { type: "string", default: "27000" },
    "nodes": { type: "string", default: "3" },
  },
});
if (values.dir === undefined) {
  console.error("Cannot start a local cluster: --dir is required");
  Deno.exit(2);
}
if (!(await etcdInstalled())) {
  console.error("Cannot start a local cluster: etcd is not installed (apt-get install etcd-server)");
  Deno.exit(2);
}
const cluster = await startLocalCluster({
  portBase: Number(values["port-base"]),
  dir: values.dir,
  nodes: Number(values.nodes),
  leaseTtlMs: 3000,
  secret: "local-cluster-secret-of-its-nodes",
});
console.log(`bootstrap=${cluster.bootstrap}`);
const stopped = Promise.withResolvers<void>();
for (const signal of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(signal, () => stopped.resolve());
await stopped.promise;
await cluster.stop();
