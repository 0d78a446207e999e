import { ConfigError } from "./config/config_error.ts";
import { loadConfig } from "./config/load_config.ts";
import { ObjectStoreProbeError } from "./objectstore/probe_object_store.ts";
import { Logger } from "./runtime/logger.ts";
import { FormatVersionError } from "./runtime/format_version_error.ts";
import { NodeDisk } from "./runtime/disk/node_disk.ts";
import { openIsalCrc32c } from "./runtime/checksum/isal_crc32c.ts";
import { OsThreadControl } from "./runtime/process/os_thread_control.ts";
import { RealClock } from "./runtime/clock/real_clock.ts";
import { Rng } from "./runtime/rng.ts";
import { CliArgsError, parseServerArgs, serverUsage } from "./config/cli_args.ts";
import { StrataServer } from "./server/server.ts";
import { clusterIo, kafkaClusterServing } from "./cluster_io.ts";
import { openKafkaListener } from "./kafka/kafka_service.ts";
import type { KafkaListener } from "./kafka/kafka_listener.ts";
import type { ListenAddress, Network, StreamConnection, StreamListener } from "./runtime/network/network.ts";

/**
 * The Deno entry point: reads the command line, the config file and the environment, opens the
 * server and serves its fetch handler with `Deno.serve`. `Deno.*` appears only here and in the
 * native CRC32C's loader (`isal_crc32c.ts`, which this file hands to the server); everything else it
 * calls is runtime-neutral.
 */

/** Bytes one read of a Kafka connection takes at most. */
const connectionReadBytes = 64 * 1024;

/** `Network` over `Deno.listen`: the Kafka listener's sockets. */
class DenoNetwork implements Network {
  listen(address: ListenAddress): Promise<StreamListener> {
    const listener = Deno.listen({ hostname: address.hostname, port: address.port, transport: "tcp" });
    const bound = listener.addr;
    return Promise.resolve({
      address: { hostname: bound.hostname, port: bound.port },
      accept: async () => {
        try {
          return denoConnection(await listener.accept());
        } catch (error) {
          if (error instanceof Deno.errors.BadResource || error instanceof Deno.errors.Interrupted) {
            return null;
          }
          throw error;
        }
      },
      close: () => closeQuietly(listener),
    });
  }

  async connect(address: ListenAddress, timeoutMs: number): Promise<StreamConnection> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      return denoConnection(await Deno.connect({ hostname: address.hostname, port: address.port, signal }));
    } catch (error) {
      const reason = signal.aborted ? `no answer within ${timeoutMs} ms` : String(error);
      throw new Error(`Cannot connect to ${address.hostname}:${address.port}: ${reason}`, { cause: error });
    }
  }
}

function denoConnection(conn: Deno.TcpConn): StreamConnection {
  conn.setNoDelay(true);
  // One buffer for every read of the connection (its bytes are the caller's until the next read):
  // a fresh one per read was 64 KiB to zero each time.
  const buffer = new Uint8Array(connectionReadBytes);
  return {
    remoteAddress: `${conn.remoteAddr.hostname}:${conn.remoteAddr.port}`,
    read: async () => {
      try {
        const n = await conn.read(buffer);
        return n === null ? null : buffer.subarray(0, n);
      } catch (error) {
        if (error instanceof Deno.errors.BadResource || error instanceof Deno.errors.Interrupted) return null;
        throw error;
      }
    },
    write: async (bytes) => {
      for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    },
    close: () => closeQuietly(conn),
  };
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch (error) {
    if (!(error instanceof Deno.errors.BadResource)) throw error;
  }
}

/**
 * A bug thrown out of a background duty ends the process: it is logged first, as every line logs an
 * error (its causes and the first one's stack), then the runtime reports it and exits.
 */
function logFailuresThatEndTheProcess(logger: Logger): void {
  globalThis.addEventListener("unhandledrejection", (event) => {
    logger.error("bug: an unhandled rejection; the process stops", { error: event.reason });
  });
  globalThis.addEventListener("error", (event) => {
    logger.error("bug: an uncaught exception; the process stops", { error: event.error });
  });
}

/** The server's disk, its file workers started now, before the server listens (`NodeDisk.startWorkers`). */
function startedDisk(): NodeDisk {
  const disk = new NodeDisk();
  disk.startWorkers();
  return disk;
}

/** The config file's text; null, once its failure is told on standard error, when it cannot be read. */
async function readConfigText(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound ? "no such file" : String(error);
    console.error(`Cannot load config: ${path}: ${reason}`);
    return null;
  }
}

async function main(): Promise<number> {
  const args = parseServerArgs(Deno.args);
  if (args.help) {
    console.log(serverUsage);
    return 0;
  }
  const text = await readConfigText(args.configPath);
  if (text === null) return 2;
  const { config, secrets } = loadConfig(text, args.configPath, Deno.env.toObject());
  const logger = new Logger({ level: config.log.level, secrets });
  logFailuresThatEndTheProcess(logger);
  const clock = new RealClock();
  const network = new DenoNetwork();
  const server = await StrataServer.open({
    config,
    logger,
    clock,
    disk: startedDisk(),
    rng: Rng.fromEntropy(),
    threads: new OsThreadControl(),
    clusterIo: clusterIo(network, clock, config.kafka.maxFrameBytes),
    openNativeCrc32c: openIsalCrc32c,
  });
  const { hostname, port } = config.http.address;
  // Signals are handled from before the socket opens: a SIGTERM right after "listening" must
  // still shut down gracefully, not kill the process with the default action.
  const stopped = Promise.withResolvers<void>();
  let http: Deno.HttpServer | null = null;
  let kafka: KafkaListener | null = null;
  let shuttingDown = false;
  const shutdown = (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info("shutting down", { signal });
    // Stop accepting, let in-flight requests finish, then close the server's own resources.
    Promise.all([http?.shutdown(), kafka?.close()]).then(() => server.close()).then(() => stopped.resolve());
  };
  Deno.addSignalListener("SIGINT", () => shutdown("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => shutdown("SIGTERM"));
  if (config.kafka.enabled) {
    kafka = await openKafkaListener({
      config: config.kafka,
      catalog: server.catalog,
      data: server.dataPlane,
      network,
      registry: server.registry,
      cluster: kafkaClusterServing(server.cluster),
      groups: server.groups,
      producerIds: server.producerIds,
      transactions: server.transactions,
      txnMarkers: server.txnMarkers,
      clock,
      turn: () => server.pieceGate.turn(),
      logger,
    });
    const { hostname, port } = kafka.address;
    logger.info("kafka listening", { address: `${hostname}:${port}` });
  }
  http = Deno.serve({
    hostname,
    port,
    onListen: (addr) => logger.info("listening", { address: `${addr.hostname}:${addr.port}` }),
  }, server.handler);
  await stopped.promise;
  return 0;
}

try {
  Deno.exit(await main());
} catch (error) {
  if (
    error instanceof ConfigError || error instanceof CliArgsError || error instanceof ObjectStoreProbeError ||
    error instanceof FormatVersionError
  ) {
    console.error(error.message);
    Deno.exit(2);
  }
  throw error;
}
