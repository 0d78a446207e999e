import { ConfigError } from "../src/config/config_error.ts";
import { loadConfig } from "../src/config/load_config.ts";
import { openObjectStore } from "../src/objectstore/open_object_store.ts";
import { ObjectStoreProbeError } from "../src/objectstore/probe_object_store.ts";
import { Logger } from "../src/runtime/logger.ts";
import { createMetricsRegistry } from "../src/runtime/metrics/metrics.ts";
import { NodeDisk } from "../src/runtime/disk/node_disk.ts";
import { RealClock } from "../src/runtime/clock/real_clock.ts";
import { Rng } from "../src/runtime/rng.ts";
import { CliArgsError } from "../src/config/cli_args.ts";
import { readMetadata } from "../src/broker/metadata/local_metadata_store.ts";
import { namesPartition, referencedIncarnations } from "../src/broker/metadata/metadata.ts";
import { initCrc32c } from "../src/runtime/checksum/crc32c.ts";
import { formatGcTable, gcJson, runGc } from "../src/tier/housekeeping/gc.ts";
import { gcUsage, parseGcArgs } from "../src/tier/housekeeping/gc_args.ts";
import { readIncarnationTable } from "../src/tier/bucket/incarnation_table.ts";
import type { PartitionAddress } from "../src/log/partition/partition.ts";
import { clusterRoot } from "../src/tier/bucket/object_keys.ts";

/**
 * `deno task gc`: finds (and with `--mode delete` removes) objects in the bucket that no live
 * partition needs. The work is `runGc` in src/tier/housekeeping/gc.ts; this entry point reads the command
 * line, the config and the data directory, and prints the report.
 */

class GcRefusedError extends Error {}

async function main(): Promise<number> {
  const args = parseGcArgs(Deno.args);
  await initCrc32c();
  if (args.help) {
    console.log(gcUsage);
    return 0;
  }
  const text = await Deno.readTextFile(args.configPath).catch((error) => {
    const reason = error instanceof Deno.errors.NotFound ? "no such file" : String(error);
    throw new GcRefusedError(`Cannot load config: ${args.configPath}: ${reason}`);
  });
  const { config, secrets } = loadConfig(text, args.configPath, Deno.env.toObject());
  const logger = new Logger({ level: "warn", secrets });
  const disk = new NodeDisk();
  const dataPath = config.system.path;
  // Without the server's metadata every object would look orphaned: refuse rather than guess.
  const first = await readMetadata(disk, dataPath);
  if (first === null) {
    throw new GcRefusedError(
      `Cannot run GC: no metadata under ${dataPath} ([system] path); point --config at the server's configuration`,
    );
  }
  const clusterId = config.system.clusterId !== "" ? config.system.clusterId : first.clusterId;
  const clock = new RealClock();
  const opened = await openObjectStore(config.tieredStorage, {
    disk,
    clock,
    rng: Rng.fromEntropy(),
    registry: createMetricsRegistry(),
    logger,
  });
  try {
    const report = await runGc({
      store: opened.store,
      root: clusterRoot(config.tieredStorage.s3.prefix, clusterId),
      mode: args.mode,
      deleteGraceMs: config.tieredStorage.housekeeping.deleteGraceMs,
      wallNowMs: () => clock.wallMs(),
      readTable: async (addresses) => {
        const metadata = await readMetadata(disk, dataPath);
        if (metadata === null) {
          throw new GcRefusedError(`Cannot run GC: the metadata under ${dataPath} vanished`);
        }
        const named = (a: PartitionAddress) => namesPartition(metadata, a);
        return readIncarnationTable(disk, dataPath, named, addresses, referencedIncarnations(metadata));
      },
      progress: (listed) => console.error(`listed ${listed} objects`),
    });
    console.log(args.format === "json" ? JSON.stringify(gcJson(report), null, 2) : formatGcTable(report));
    return report.deleteFailures.length > 0 ? 1 : 0;
  } finally {
    await opened.close();
  }
}

try {
  Deno.exit(await main());
} catch (error) {
  if (
    error instanceof ConfigError || error instanceof CliArgsError || error instanceof ObjectStoreProbeError ||
    error instanceof GcRefusedError
  ) {
    console.error(error.message);
    Deno.exit(2);
  }
  throw error;
}
