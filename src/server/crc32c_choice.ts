import type { Crc32cSetting } from "../config/config.ts";
import { ConfigError } from "../config/config_error.ts";
import {
  type Crc32cEngine,
  crc32cEngineName,
  initCrc32c,
  useCrc32cEngine,
} from "../runtime/checksum/crc32c.ts";
import type { Logger } from "../runtime/logger.ts";

/** Opens a native CRC32C engine from a shared library; throws when it cannot. */
export type NativeCrc32cOpener = (libraryPath: string) => Crc32cEngine;

/**
 * Puts the CRC32C engine `[system] crc32c` asks for in place and returns its name: "wasm" never
 * tries the library; "native" fails start-up with a ConfigError naming the key when it cannot be
 * opened or gives wrong answers; "auto" falls back to WebAssembly with a warning naming the key.
 * Without an opener (tests sharing a process, entry points without `--allow-ffi`), native is
 * unavailable.
 */
export async function chooseCrc32c(
  { crc32c: setting, crc32cLibrary: libraryPath }: { crc32c: Crc32cSetting; crc32cLibrary: string },
  openNative: NativeCrc32cOpener | undefined,
  logger: Logger,
): Promise<string> {
  await initCrc32c();
  if (setting === "wasm") return crc32cEngineName();
  try {
    if (openNative === undefined) throw new Error("this entry point offers no native engine");
    useCrc32cEngine(openNative(libraryPath));
  } catch (error) {
    const reason = (error as Error).message;
    if (setting === "native") {
      throw new ConfigError("[system] crc32c", `"native" but ${reason}`, { cause: error });
    }
    logger.warn("CRC32C by WebAssembly: the native engine is unavailable", {
      key: "[system] crc32c_library",
      library: libraryPath,
      reason,
    });
  }
  return crc32cEngineName();
}
