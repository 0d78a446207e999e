import { parse, TomlError } from "smol-toml";
import { type Config, toConfig } from "./config.ts";
import { ConfigError } from "./config_error.ts";
import type { ConfigSchema, ValidatedConfig } from "./key_spec.ts";
import { configSchema } from "./schema.ts";
import { validateConfig } from "./validate_config.ts";

export interface LoadedConfig {
  config: Config;
  /** Secret values to scrub from every log line. */
  secrets: string[];
}

/**
 * Parses the text of a TOML config file, applies `STRATA_*` environment overrides and validates
 * the result. `sourceName` (the file's path) appears in syntax errors. Pure: the caller reads the
 * file and passes the environment, so this runs the same under Node, Deno and the simulator.
 */
export function loadConfig(
  text: string,
  sourceName: string,
  env: Record<string, string | undefined>,
  schema: ConfigSchema = configSchema,
): LoadedConfig {
  let document: Record<string, unknown>;
  try {
    document = parse(text) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) {
      throw new ConfigError(sourceName, `invalid TOML at line ${error.line}, column ${error.column}`);
    }
    throw error;
  }
  const validated = validateConfig(schema, document, env);
  return { config: toConfig(validated), secrets: secretValues(schema, validated) };
}

export function secretValues(schema: ConfigSchema, validated: ValidatedConfig): string[] {
  const secrets: string[] = [];
  for (const [section, keys] of Object.entries(schema)) {
    for (const [key, spec] of Object.entries(keys)) {
      const value = validated[section]?.[key];
      if (spec.kind === "string" && spec.secret && typeof value === "string" && value !== "") {
        secrets.push(value);
      }
      if (spec.kind === "strings" && spec.secret && Array.isArray(value)) secrets.push(...value);
    }
  }
  return secrets;
}
