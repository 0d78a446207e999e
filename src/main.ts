/**
 * The Deno entry point: reads the command line, the config file and the environment, opens the
 * server and serves its fetch handler with `Deno.serve`. `Deno.*` appears only here; everything
 * it calls is runtime-neutral.
 */
import { ConfigError } from "./config/config_error.ts";
import { loadConfig } from "./config/load_config.ts";
import { ObjectStoreProbeError } from "./objectstore/probe_object_store.ts";
import { Logger } from "./runtime/logger.ts";
import { NodeDisk } from "./runtime/node_disk.ts";
import { RealClock } from "./runtime/real_clock.ts";
import { Rng } from "./runtime/rng.ts";
import { CliArgsError, parseServerArgs, serverUsage } from "./server/cli_args.ts";
import { StrataServer } from "./server/server.ts";

async function main(): Promise<number> {
  const args = parseServerArgs(Deno.args);
  if (args.help) {
    console.log(serverUsage);
    return 0;
  }
  let text: string;
  try {
    text = await Deno.readTextFile(args.configPath);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound ? "no such file" : String(error);
    console.error(`Cannot load config: ${args.configPath}: ${reason}`);
    return 2;
  }
  const { config, secrets } = loadConfig(text, args.configPath, Deno.env.toObject());
  const logger = new Logger({ level: config.log.level, secrets });
  const server = await StrataServer.open({
    config,
    logger,
    clock: new RealClock(),
    disk: new NodeDisk(),
    rng: Rng.fromEntropy(),
  });
  const { hostname, port } = config.http.address;
  const listening = Promise.withResolvers<void>();
  const http = Deno.serve({
    hostname,
    port,
    onListen: (addr) => {
      logger.info("listening", { address: `${addr.hostname}:${addr.port}` });
      listening.resolve();
    },
  }, server.handler);
  await listening.promise;

  const stopped = Promise.withResolvers<void>();
  const shutdown = (signal: string) => {
    logger.info("shutting down", { signal });
    // Stop accepting, let in-flight requests finish, then close the server's own resources.
    http.shutdown().then(() => server.close()).then(() => stopped.resolve());
  };
  Deno.addSignalListener("SIGINT", () => shutdown("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => shutdown("SIGTERM"));
  await stopped.promise;
  return 0;
}

try {
  Deno.exit(await main());
} catch (error) {
  if (
    error instanceof ConfigError || error instanceof CliArgsError || error instanceof ObjectStoreProbeError
  ) {
    console.error(error.message);
    Deno.exit(2);
  }
  throw error;
}
