import { runCommand } from "../local_cluster.ts";
import { MissedDeadlineError, realTime, waitFor } from "../../../test/helpers/wait_for.ts";

/**
 * The peer streaming servers bench:peers measures beside Strata, started from Debian's packages on
 * loopback in a temporary directory and stopped by PID: NATS with JetStream (`nats-server`) and
 * RabbitMQ with its stream plugin (`rabbitmq-server`). Nothing is downloaded: a server that is not
 * installed is reported with how to install it, and the benchmark goes on without it.
 */

/** A peer server running for the benchmark. */
export interface PeerServer {
  name: "nats" | "rabbitmq";
  /** The process that serves (for RabbitMQ the Erlang VM, `beam.smp`), for CPU and RSS readings. */
  pid: number;
  /** "host:port" its clients connect to. */
  address: string;
  /** Stops it and waits for its processes to exit. */
  stop(): Promise<void>;
}

/** How long a peer may take to start listening. */
const startDeadlineMs = 90_000;
/** How long a process may take to be gone once SIGKILLed. */
const killedExitMs = 60_000;

async function installed(command: string): Promise<boolean> {
  return (await runCommand("sh", ["-c", `command -v ${command}`])).code === 0;
}

/** Why NATS cannot run here, or null when it can. */
export async function natsUnavailable(): Promise<string | null> {
  return await installed("nats-server")
    ? null
    : "nats-server is not installed (Debian: apt-get install -y nats-server); NATS is left out";
}

/** Why RabbitMQ cannot run here, or null when it can. */
export async function rabbitmqUnavailable(): Promise<string | null> {
  const found = await Deno.stat("/usr/lib/rabbitmq/bin/rabbitmq-server").then(() => true, () => false);
  return found
    ? null
    : "rabbitmq-server is not installed (Debian: apt-get install -y rabbitmq-server); RabbitMQ is left out";
}

/** Resolves once a TCP connection to `port` on loopback succeeds (a refused one is not yet); throws after `startDeadlineMs`. */
async function awaitPort(port: number, what: string): Promise<void> {
  await waitFor(`${what} listening on port ${port}`, async () => {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return true;
  }, { deadlineMs: startDeadlineMs, pace: realTime(20), throwMeansNotYet: true });
}

/** Sends SIGTERM, and SIGKILL if the process has not exited after `graceMs`; resolves once it is gone. */
export async function stopPid(pid: number, graceMs = 15_000): Promise<void> {
  const alive = () => Deno.stat(`/proc/${pid}`).then(() => true, () => false);
  try {
    Deno.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const gone = (deadlineMs: number) =>
    waitFor(`process ${pid} to exit`, async () => !(await alive()), { deadlineMs, pace: realTime(50) });
  try {
    await gone(graceMs);
    return;
  } catch (error) {
    if (!(error instanceof MissedDeadlineError)) throw error;
  }
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    return;
  }
  await gone(killedExitMs);
}

/**
 * NATS with JetStream: file store under `dir`, 1 MB payloads allowed. Its file store syncs every
 * 2 minutes and 2.9 has no setting to sync each write.
 */
export async function startNats(dir: string, port: number): Promise<PeerServer> {
  await Deno.mkdir(`${dir}/nats/js`, { recursive: true });
  const config = `${dir}/nats/nats.conf`;
  await Deno.writeTextFile(
    config,
    [
      `listen: 127.0.0.1:${port}`,
      "max_payload: 1MB",
      `jetstream { store_dir: "${dir}/nats/js", max_memory_store: 1GB, max_file_store: 40GB }`,
      "",
    ].join("\n"),
  );
  const child = new Deno.Command("nats-server", {
    args: ["-c", config],
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    await awaitPort(port, "nats-server");
  } catch (error) {
    await stopPid(child.pid);
    throw error;
  }
  return {
    name: "nats",
    pid: child.pid,
    address: `127.0.0.1:${port}`,
    stop: async () => {
      await stopPid(child.pid);
      await child.status;
    },
  };
}

/**
 * RabbitMQ with the stream plugin, as root without systemd: every path under `dir`, listening on
 * loopback only (AMQP on `amqpPort`, streams on `streamPort`), with an Erlang port mapper of its own
 * on loopback (`amqpPort` + 3), stopped with it. Streams do not fsync each write.
 */
export async function startRabbitmq(dir: string, amqpPort: number, streamPort: number): Promise<PeerServer> {
  const home = `${dir}/rabbitmq`;
  await Deno.mkdir(home, { recursive: true });
  await Deno.writeTextFile(
    `${home}/rabbitmq.conf`,
    [
      `listeners.tcp.default = 127.0.0.1:${amqpPort}`,
      `stream.listeners.tcp.1 = 127.0.0.1:${streamPort}`,
      "stream.advertised_host = localhost",
      `stream.advertised_port = ${streamPort}`,
      "",
    ].join("\n"),
  );
  await Deno.writeTextFile(`${home}/enabled_plugins`, "[rabbitmq_stream].\n");
  const epmdPort = amqpPort + 3;
  const env = {
    RABBITMQ_NODENAME: "rabbit@localhost",
    RABBITMQ_CONFIG_FILE: `${home}/rabbitmq.conf`,
    RABBITMQ_ENABLED_PLUGINS_FILE: `${home}/enabled_plugins`,
    RABBITMQ_MNESIA_BASE: `${home}/mnesia`,
    RABBITMQ_LOG_BASE: `${home}/log`,
    RABBITMQ_PID_FILE: `${home}/pid`,
    RABBITMQ_DIST_PORT: String(amqpPort + 1),
    HOME: home,
    ERL_EPMD_ADDRESS: "127.0.0.1",
    ERL_EPMD_PORT: String(epmdPort),
  };
  const child = new Deno.Command("/usr/lib/rabbitmq/bin/rabbitmq-server", {
    env,
    stdout: "null",
    stderr: "null",
  }).spawn();
  const stopAll = async (beamPid: number | null) => {
    if (beamPid !== null) await stopPid(beamPid);
    await stopPid(child.pid);
    await child.status;
    // The port mapper the server started on its own port, which no other node uses.
    await runCommand("epmd", ["-port", String(epmdPort), "-kill"]);
  };
  try {
    await awaitPort(streamPort, "rabbitmq-server");
    const beamPid = Number((await Deno.readTextFile(`${home}/pid`)).trim());
    return {
      name: "rabbitmq",
      pid: beamPid,
      address: `127.0.0.1:${streamPort}`,
      stop: () => stopAll(beamPid),
    };
  } catch (error) {
    await stopAll(null);
    throw error;
  }
}
