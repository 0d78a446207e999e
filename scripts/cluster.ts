import { serverTask } from "./lib/server_task.ts";
import { etcdInstalled, runCommand } from "./lib/local_cluster.ts";

/**
 * `deno task cluster [--dir DIR] [--port-base N] [--nodes N]`: a local Strata cluster for
 * development. Starts a 3-member etcd (Debian's `etcd`, by scripts/etcd-cluster.sh) and N Strata
 * nodes (3 by default) on loopback, each with its own data directory and config under DIR (a new
 * temporary directory by default), prints the Kafka bootstrap servers and the HTTP addresses, and
 * stops everything on Ctrl-C (or SIGTERM). etcd's client ports are PORT_BASE + 1..3 (peer ports
 * + 11..13), node n's HTTP port PORT_BASE + 20 + n and its Kafka port PORT_BASE + 30 + n.
 */

const usage = "usage: deno task cluster [--dir DIR] [--port-base N] [--nodes N]   (port base 20000 to 60000)";

function parseArgs(args: string[]): { dir: string | null; portBase: number; nodes: number } {
  const options = { dir: null as string | null, portBase: 25_000, nodes: 3 };
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], args[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--dir") options.dir = value;
    else if (flag === "--port-base") options.portBase = Number(value);
    else if (flag === "--nodes") options.nodes = Number(value);
    else throw new Error(`unknown option ${flag}`);
  }
  if (!Number.isInteger(options.portBase) || options.portBase < 20_000 || options.portBase > 60_000) {
    throw new Error(`--port-base must be an integer from 20000 to 60000, got ${options.portBase}`);
  }
  if (!Number.isInteger(options.nodes) || options.nodes < 1 || options.nodes > 9) {
    throw new Error(`--nodes must be an integer from 1 to 9, got ${options.nodes}`);
  }
  return options;
}

function nodeConfig(dir: string, id: number, portBase: number, endpoints: string): string {
  return `[system]
path = "${dir}/data${id}"
fsync = "interval"
[http]
address = "127.0.0.1:${portBase + 20 + id}"
[kafka]
address = "127.0.0.1:${portBase + 30 + id}"
[tiered_storage]
enabled = false
[cluster]
enabled = true
node_id = ${id}
etcd_endpoints = [${endpoints.split(",").map((e) => `"${e}"`).join(", ")}]
secret = "local-development-cluster-secret"
`;
}

async function main(): Promise<number> {
  let options;
  try {
    options = parseArgs(Deno.args);
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`);
    return 2;
  }
  if (!(await etcdInstalled())) {
    console.error("etcd is not installed: apt-get install etcd-server (Debian's etcd 3.4)");
    return 2;
  }
  const dir = options.dir ?? await Deno.makeTempDir({ prefix: "strata-cluster-" });
  const etcdDir = `${dir}/etcd`;
  const script = new URL("./etcd-cluster.sh", import.meta.url).pathname;
  const started = await runCommand("bash", [script, "start", etcdDir, String(options.portBase)]);
  if (started.code !== 0) {
    console.error(`etcd did not start: ${started.stderr}`);
    return 1;
  }
  const endpoints = /endpoints=(\S+)/.exec(started.stdout)![1]!;
  const task = serverTask();
  const nodes: Deno.ChildProcess[] = [];
  for (let id = 1; id <= options.nodes; id++) {
    const configPath = `${dir}/node${id}.toml`;
    await Deno.writeTextFile(configPath, nodeConfig(dir, id, options.portBase, endpoints));
    const log = await Deno.open(`${dir}/node${id}.log`, { create: true, append: true });
    nodes.push(
      new Deno.Command("deno", {
        args: [...task.args, "--config", configPath],
        cwd: new URL("..", import.meta.url).pathname,
        env: task.env,
        stdout: "null",
        stderr: "piped",
      }).spawn(),
    );
    nodes.at(-1)!.stderr.pipeTo(log.writable).catch(() => {});
  }
  const bootstrap = nodes.map((_, i) => `127.0.0.1:${options.portBase + 31 + i}`).join(",");
  console.log(`etcd:      ${endpoints}`);
  console.log(`bootstrap: ${bootstrap}`);
  nodes.forEach((_, i) =>
    console.log(
      `node ${i + 1}:    http://127.0.0.1:${options.portBase + 21 + i}  (log ${dir}/node${i + 1}.log)`,
    )
  );
  console.log(`data in ${dir}; Ctrl-C stops everything`);
  const stop = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", () => stop.resolve());
  Deno.addSignalListener("SIGTERM", () => stop.resolve());
  await stop.promise;
  for (const node of nodes) {
    try {
      node.kill("SIGTERM");
    } catch {
      // Already gone.
    }
  }
  await Promise.all(nodes.map((n) => n.status));
  await runCommand("bash", [script, "stop", etcdDir]);
  console.log("stopped");
  return 0;
}

Deno.exit(await main());
