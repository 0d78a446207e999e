import { CliArgsError } from "../../config/cli_args.ts";
import type { RestoreRequest } from "./bucket_restore.ts";

export interface RestoreArgs {
  request: RestoreRequest;
  configPath: string;
  help: boolean;
}

export const restoreUsage =
  `Usage: deno task restore --stream NAME --topic NAME [--partition N] [--as NAME] [--cluster-id ID] [--dry-run] [--config PATH]

Restores a topic, or one partition's data, from the bucket into the server's data directory while
the server is stopped (POST /admin/restore does the same while it runs). A shallow restore: the
segments stay in the bucket, the partitions get markers for them and an empty active segment at the
next offset, and the topic its options from the bucket's topic manifest. Nothing is deleted.

  --stream NAME      the stream the topic is in (created here when missing)
  --topic NAME       the topic in the bucket
  --partition N      only this partition's data; the topic's other partitions start empty
  --as NAME          the topic's name here (the bucket's by default)
  --cluster-id ID    the source cluster in the bucket (needed when it holds more than one)
  --dry-run          print what the restore would take, change nothing
  --config PATH      the server's TOML configuration (default: ./config.toml)

Prints a JSON report: each partition's segments, next offset, where each range came from (the
manifest or the listing) and what was left out, with why.`;

/** Parses the restore command line; unknown arguments and missing values are refused by name. */
export function parseRestoreArgs(argv: readonly string[]): RestoreArgs {
  const found = new Map<string, string>();
  let dryRun = false;
  let help = false;
  const valued = ["--stream", "--topic", "--partition", "--as", "--cluster-id", "--config"];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.startsWith("--") && arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    if (name === "--help" || name === "-h") help = true;
    else if (name === "--dry-run") dryRun = true;
    else if (valued.includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || value === "") {
        throw new CliArgsError(`Cannot parse arguments: ${name} needs a value`);
      }
      found.set(name, value);
    } else throw new CliArgsError(`Cannot parse arguments: unknown argument ${JSON.stringify(arg)}`);
  }
  const configPath = found.get("--config") ?? "./config.toml";
  if (help) return { request: { stream: "", topic: "", dryRun }, configPath, help };
  const required = (name: string) => {
    const value = found.get(name);
    if (value === undefined) throw new CliArgsError(`Cannot parse arguments: ${name} is required`);
    return value;
  };
  const partitionText = found.get("--partition");
  if (partitionText !== undefined && !/^(0|[1-9][0-9]{0,6})$/.test(partitionText)) {
    throw new CliArgsError(
      `Cannot parse arguments: --partition must be a partition id, got ${JSON.stringify(partitionText)}`,
    );
  }
  const as = found.get("--as");
  const clusterId = found.get("--cluster-id");
  return {
    request: {
      stream: required("--stream"),
      topic: required("--topic"),
      ...(partitionText === undefined ? {} : { partition: Number(partitionText) }),
      ...(as === undefined ? {} : { as }),
      ...(clusterId === undefined ? {} : { clusterId }),
      dryRun,
    },
    configPath,
    help,
  };
}
