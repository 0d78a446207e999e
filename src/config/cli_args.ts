export interface ServerArgs {
  configPath: string;
  /** True when `--config` was given; a missing default file is then not the user's mistake. */
  configPathGiven: boolean;
  help: boolean;
}

export class CliArgsError extends Error {
  override name = "CliArgsError";
}

export const serverUsage = `Usage: deno task server [--config PATH]

  --config PATH   the TOML configuration file (default: ./config.toml)
  --help          print this text

Single keys can be overridden with STRATA_<SECTION>_<KEY> environment variables,
e.g. STRATA_HTTP_ADDRESS=127.0.0.1:9090.`;

/** Parses the server's command line: `--config PATH` (or `--config=PATH`) and `--help`. */
export function parseServerArgs(argv: readonly string[]): ServerArgs {
  const args: ServerArgs = { configPath: "./config.toml", configPathGiven: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") {
      args.help = true;
    } else if (arg === "--config") {
      const value = argv[++i];
      if (value === undefined || value === "") {
        throw new CliArgsError("Cannot parse arguments: --config needs a path");
      }
      args.configPath = value;
      args.configPathGiven = true;
    } else if (arg.startsWith("--config=")) {
      args.configPath = arg.slice("--config=".length);
      if (args.configPath === "") throw new CliArgsError("Cannot parse arguments: --config needs a path");
      args.configPathGiven = true;
    } else {
      throw new CliArgsError(`Cannot parse arguments: unknown argument ${JSON.stringify(arg)}`);
    }
  }
  return args;
}
