import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** Every file under `dir`, at any depth; none when `dir` does not exist. */
export function filesUnder(dir: string): string[] {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}
