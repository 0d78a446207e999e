import { CliArgsError } from "../../config/cli_args.ts";
import type { GcMode } from "./gc.ts";

export interface GcArgs {
  mode: GcMode;
  format: "table" | "json";
  configPath: string;
  help: boolean;
}

export const gcUsage = `Usage: deno task gc [--mode dry-run|delete] [--format table|json] [--config PATH]

Lists {prefix}/{cluster_id}/ in the object store and classifies every object as live,
below_deleted_watermark, stale_generation, unknown_incarnation, in_grace or unrecognized,
reading the server's data directory for the metadata. Safe while the server runs.

  --mode dry-run   count the classes and delete nothing (the default)
  --mode delete    also delete the garbage classes; objects younger than
                   [tiered_storage.housekeeping] delete_grace are never deleted
  --format table   counts per class as a table (the default); json for machines
  --config PATH    the server's TOML configuration (default: ./config.toml)

Progress goes to standard error; the counts per class come at the end on standard output.`;

/** Parses the GC command line; unknown arguments and values are refused with a clear message. */
export function parseGcArgs(argv: readonly string[]): GcArgs {
  const args: GcArgs = { mode: "dry-run", format: "table", configPath: "./config.toml", help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.startsWith("--") && arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") {
        throw new CliArgsError(`Cannot parse arguments: ${name} needs a value`);
      }
      return v;
    };
    if (name === "--help" || name === "-h") args.help = true;
    else if (name === "--mode") args.mode = oneOf(name, value(), ["dry-run", "delete"] as const);
    else if (name === "--format") args.format = oneOf(name, value(), ["table", "json"] as const);
    else if (name === "--config") args.configPath = value();
    else throw new CliArgsError(`Cannot parse arguments: unknown argument ${JSON.stringify(arg)}`);
  }
  return args;
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new CliArgsError(
      `Cannot parse arguments: ${name} must be one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`,
    );
  }
  return value as T;
}
