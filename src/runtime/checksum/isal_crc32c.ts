import type { Crc32cEngine } from "./crc32c.ts";

/**
 * CRC32C by Intel's ISA-L (`crc32_iscsi`, Debian's `libisal2`) through Deno's foreign function
 * interface: the CPU's CRC32 instruction and carry-less multiplication on the caller's bytes where
 * they lie, about 30 times the WebAssembly hasher's speed on 1 MiB (TUNING.md, "crc32c"). The
 * process needs `--allow-ffi`. Throws when the library cannot be opened or lacks the symbol.
 */
export function openIsalCrc32c(libraryPath: string): Crc32cEngine {
  let library;
  try {
    library = Deno.dlopen(
      libraryPath,
      {
        crc32_iscsi: { parameters: ["buffer", "i32", "u32"], result: "u32" },
      } as const,
    );
  } catch (error) {
    throw new Error(`Cannot open the CRC32C library ${libraryPath}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const crc32Iscsi = library.symbols.crc32_iscsi;
  return {
    name: `native (${libraryPath})`,
    // ISA-L's iSCSI CRC takes and returns the register without the final inversion.
    crc32c: (data) => (crc32Iscsi(data, data.length, 0xffffffff) ^ 0xffffffff) >>> 0,
  };
}
