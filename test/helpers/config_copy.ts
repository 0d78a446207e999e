import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const shippedConfig = readFileSync(new URL("../../config.toml", import.meta.url), "utf8");

/** A copy of the shipped config.toml in `dir` with its data under `dir` and free ports; returns its path. */
export function configCopy(dir: string, extra = ""): string {
  const path = join(dir, "config.toml");
  const text = shippedConfig
    .replace('path = "./data"', `path = ${JSON.stringify(join(dir, "data"))}`)
    .replace('address = "127.0.0.1:8080"', 'address = "127.0.0.1:0"')
    .replace('address = "127.0.0.1:9092"', 'address = "127.0.0.1:0"');
  writeFileSync(path, text + extra);
  return path;
}
