import { closeSync, constants, openSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Whether the file system under `dir` takes `O_DIRECT` (ext4 and xfs do; tmpfs does not): the tests
 * of direct I/O expect it to be used where it can be, and a buffered fallback elsewhere.
 */
export function takesDirectIo(dir: string): boolean {
  if (constants.O_DIRECT === undefined) return false;
  const probe = join(dir, "direct-probe");
  writeFileSync(probe, "");
  try {
    closeSync(openSync(probe, constants.O_RDWR | constants.O_DIRECT));
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe);
  }
}
