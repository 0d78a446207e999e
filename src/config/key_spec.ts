/** How one configuration key is typed, defaulted and bounded. */
export type KeySpec =
  | { kind: "string"; default: string; secret?: boolean; nonEmpty?: boolean }
  | { kind: "bool"; default: boolean }
  | { kind: "int"; default: number; min: number; max: number }
  | { kind: "enum"; default: string; values: readonly string[] }
  | { kind: "bytes"; default: number | "unlimited"; min: number; max: number; unlimited?: boolean }
  | { kind: "duration"; default: number | "unlimited"; min: number; max: number; unlimited?: boolean }
  | { kind: "address"; default: string }
  /** A list of strings; from the environment, comma-separated. */
  | { kind: "strings"; default: readonly string[]; secret?: boolean; itemsMax: number };

/** Sections by name (dotted for nested tables, e.g. "tiered_storage.s3"), then keys by name. */
export type ConfigSchema = Record<string, Record<string, KeySpec>>;

/** A validated value: strings, booleans, numbers (bytes and ms), "unlimited", or an address. */
export type ConfigValue = string | boolean | number | "unlimited" | Address | readonly string[];

export interface Address {
  hostname: string;
  port: number;
}

export type ValidatedConfig = Record<string, Record<string, ConfigValue>>;
