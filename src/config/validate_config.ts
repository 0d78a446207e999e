import { ConfigError } from "./config_error.ts";
import type { Address, ConfigSchema, ConfigValue, KeySpec, ValidatedConfig } from "./key_spec.ts";
import { parseBytes, parseDurationMs } from "./units.ts";

/** One raw value and where it came from, for error messages. */
interface RawValue {
  value: unknown;
  /** "[system] path" or "STRATA_SYSTEM_PATH ([system] path)". */
  origin: string;
}

/**
 * Validates a parsed TOML document plus environment overrides against a schema. An unknown
 * section or key, a wrong type or an out-of-range value throws a `ConfigError` naming the key.
 * Environment variables `STRATA_<SECTION>_<KEY>` (dots and dashes as underscores, upper case)
 * override single keys; their values are strings parsed by the key's kind.
 */
export function validateConfig(
  schema: ConfigSchema,
  document: Record<string, unknown>,
  env: Record<string, string | undefined>,
): ValidatedConfig {
  const raw = collectDocument(schema, document);
  applyEnvironment(schema, env, raw);
  const result: ValidatedConfig = {};
  for (const [section, keys] of Object.entries(schema)) {
    result[section] = {};
    for (const [key, spec] of Object.entries(keys)) {
      // Defaults go through the same coercion, so a default is typed (and checked) like a value.
      const given = raw.get(`${section}\u0000${key}`) ??
        { value: spec.default, origin: `[${section}] ${key} (default)` };
      result[section]![key] = coerce(spec, given);
    }
  }
  return result;
}

export function envVariableName(section: string, key: string): string {
  return `STRATA_${section}_${key}`.replace(/[.-]/g, "_").toUpperCase();
}

function collectDocument(schema: ConfigSchema, document: Record<string, unknown>): Map<string, RawValue> {
  const raw = new Map<string, RawValue>();
  const visit = (table: Record<string, unknown>, path: string[]) => {
    for (const [name, value] of Object.entries(table)) {
      const sectionPath = [...path, name].join(".");
      if (path.length === 0 || isTable(value)) {
        if (!isTable(value)) throw new ConfigError(`${name}`, "top-level keys must be inside a [section]");
        const known = schema[sectionPath] !== undefined || hasSubsection(schema, sectionPath);
        if (!known) throw new ConfigError(`[${sectionPath}]`, "unknown section");
        visit(value, [...path, name]);
        continue;
      }
      const section = path.join(".");
      const keys = schema[section];
      if (keys === undefined || keys[name] === undefined) {
        throw new ConfigError(`[${section}] ${name}`, "unknown key");
      }
      raw.set(`${section}\u0000${name}`, { value, origin: `[${section}] ${name}` });
    }
  };
  visit(document, []);
  return raw;
}

function applyEnvironment(
  schema: ConfigSchema,
  env: Record<string, string | undefined>,
  raw: Map<string, RawValue>,
): void {
  const known = new Map<string, [string, string]>();
  for (const [section, keys] of Object.entries(schema)) {
    for (const key of Object.keys(keys)) known.set(envVariableName(section, key), [section, key]);
  }
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith("STRATA_") || value === undefined) continue;
    const target = known.get(variable);
    if (target === undefined) throw new ConfigError(variable, "unknown environment variable (no such key)");
    const [section, key] = target;
    raw.set(`${section}\u0000${key}`, { value, origin: `${variable} ([${section}] ${key})` });
  }
}

function coerce(spec: KeySpec, given: RawValue): ConfigValue {
  const { value, origin } = given;
  const fromEnv = origin.startsWith("STRATA_");
  switch (spec.kind) {
    case "string": {
      if (typeof value !== "string") {
        // A secret's value is never echoed, even when it is the wrong type.
        const shown = spec.secret ? typeof value : describe(value);
        throw new ConfigError(origin, `expected a string, got ${shown}`);
      }
      if (spec.nonEmpty && value === "") throw new ConfigError(origin, "must not be empty");
      return value;
    }
    case "bool": {
      if (typeof value === "boolean") return value;
      if (fromEnv && (value === "true" || value === "false")) return value === "true";
      throw new ConfigError(origin, `expected true or false, got ${describe(value)}`);
    }
    case "int": {
      const n = typeof value === "string" && fromEnv && /^-?\d+$/.test(value) ? Number(value) : value;
      if (typeof n !== "number" || !Number.isSafeInteger(n)) {
        throw new ConfigError(origin, `expected an integer, got ${describe(value)}`);
      }
      return checkRange(origin, n, spec.min, spec.max, String);
    }
    case "enum": {
      if (typeof value !== "string" || !spec.values.includes(value)) {
        throw new ConfigError(
          origin,
          `expected one of ${spec.values.map((v) => `"${v}"`).join(", ")}, got ${describe(value)}`,
        );
      }
      return value;
    }
    case "bytes":
      return coerceQuantity(spec, given, parseBytes, 'a size such as "1 MiB" or a number of bytes');
    case "duration":
      return coerceQuantity(
        spec,
        given,
        parseDurationMs,
        'a duration such as "90 s" or a number of milliseconds',
      );
    case "address":
      return parseAddress(origin, value);
    case "strings": {
      const list = typeof value === "string" && fromEnv ? value.split(",").filter((v) => v !== "") : value;
      if (!Array.isArray(list) || !list.every((v) => typeof v === "string" && v !== "")) {
        throw new ConfigError(origin, "expected an array of non-empty strings");
      }
      if (list.length > spec.itemsMax) {
        throw new ConfigError(origin, `at most ${spec.itemsMax} entries are allowed`);
      }
      return list as string[];
    }
  }
}

function coerceQuantity(
  spec: Extract<KeySpec, { kind: "bytes" | "duration" }>,
  { value, origin }: RawValue,
  parse: (input: string | number) => number | null,
  expected: string,
): number | "unlimited" {
  if (value === "unlimited") {
    if (spec.unlimited) return "unlimited";
    throw new ConfigError(origin, '"unlimited" is not allowed here');
  }
  const parsed = typeof value === "string" || typeof value === "number" ? parse(value) : null;
  if (parsed === null) throw new ConfigError(origin, `expected ${expected}, got ${describe(value)}`);
  return checkRange(origin, parsed, spec.min, spec.max, String);
}

function checkRange(
  origin: string,
  n: number,
  min: number,
  max: number,
  show: (n: number) => string,
): number {
  if (n < min || n > max) {
    throw new ConfigError(origin, `${show(n)} is out of range [${show(min)}, ${show(max)}]`);
  }
  return n;
}

/** `"host:port"` as an address; `origin` names the key in the refusal. */
export function parseAddress(origin: string, value: unknown): Address {
  const match = typeof value === "string"
    ? /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value)
    : null;
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) {
    throw new ConfigError(origin, `expected "host:port" with a port from 0 to 65535, got ${describe(value)}`);
  }
  return { hostname: match[1]!.replace(/^\[|\]$/g, ""), port };
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (isTable(value)) return "a table";
  if (Array.isArray(value)) return "an array";
  return `${typeof value} ${String(value)}`;
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function hasSubsection(schema: ConfigSchema, prefix: string): boolean {
  return Object.keys(schema).some((s) => s.startsWith(`${prefix}.`));
}
