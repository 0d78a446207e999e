import { restoreFromBucket } from "../src/broker/restore/bucket_restore.ts";
import { RestoreRefusedError } from "../src/broker/broker_errors.ts";
import { parseRestoreArgs, restoreUsage } from "../src/broker/restore/restore_args.ts";
import { CliArgsError } from "../src/config/cli_args.ts";
import { ConfigError } from "../src/config/config_error.ts";
import { loadConfig } from "../src/config/load_config.ts";
import { ObjectStoreProbeError } from "../src/objectstore/probe_object_store.ts";
import { FormatVersionError } from "../src/runtime/format_version_error.ts";
import { openIsalCrc32c } from "../src/runtime/checksum/isal_crc32c.ts";
import { Logger } from "../src/runtime/logger.ts";
import { NodeDisk } from "../src/runtime/disk/node_disk.ts";
import { RealClock } from "../src/runtime/clock/real_clock.ts";
import { Rng } from "../src/runtime/rng.ts";
import { StrataServer } from "../src/server/server.ts";

/**
 * `deno task restore`: restores a topic from the bucket into the server's data directory while the
 * server is stopped. It opens the server in this process (no listener), runs the same restore as
 * `POST /admin/restore` (src/broker/restore/bucket_restore.ts), prints its JSON report and closes it.
 * Exit codes: 0 restored (or planned, with --dry-run), 2 refused (the message says why).
 */

async function main(): Promise<number> {
  const args = parseRestoreArgs(Deno.args);
  if (args.help) {
    console.log(restoreUsage);
    return 0;
  }
  const text = await Deno.readTextFile(args.configPath).catch((error) => {
    const reason = error instanceof Deno.errors.NotFound ? "no such file" : String(error);
    throw new CliArgsError(`Cannot load config: ${args.configPath}: ${reason}`);
  });
  const { config, secrets } = loadConfig(text, args.configPath, Deno.env.toObject());
  if (!config.tieredStorage.enabled) {
    throw new CliArgsError(
      "Cannot restore: [tiered_storage] enabled is false in the configuration (no bucket)",
    );
  }
  if (config.cluster.enabled) {
    throw new CliArgsError(
      "Cannot restore into a cluster with the command ([cluster] enabled is true): call POST /admin/restore on a running node",
    );
  }
  const logger = new Logger({ level: "warn", secrets });
  const server = await StrataServer.open({
    config,
    logger,
    clock: new RealClock(),
    disk: new NodeDisk(),
    rng: Rng.fromEntropy(),
    openNativeCrc32c: openIsalCrc32c,
  });
  try {
    const report = await restoreFromBucket({
      catalog: server.catalog,
      store: server.objectStore!.store,
      prefix: config.tieredStorage.s3.prefix,
      logger,
    }, args.request);
    console.log(JSON.stringify(report, null, 2));
    return 0;
  } finally {
    await server.close();
  }
}

try {
  Deno.exit(await main());
} catch (error) {
  if (
    error instanceof ConfigError || error instanceof CliArgsError || error instanceof ObjectStoreProbeError ||
    error instanceof FormatVersionError || error instanceof RestoreRefusedError
  ) {
    console.error(error.message);
    Deno.exit(2);
  }
  throw error;
}
