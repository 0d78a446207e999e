import { assert } from "./assert.ts";

/**
 * The directory that holds `path`: everything before its last `/` (`/` itself for a file at the
 * root). The path must name its directory: a bare file name has none to give.
 */
export function dirOf(path: string): string {
  const slash = path.lastIndexOf("/");
  assert(slash >= 0, `a path names its directory: ${path}`);
  return slash === 0 ? "/" : path.slice(0, slash);
}
