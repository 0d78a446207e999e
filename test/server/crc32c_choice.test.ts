import t from "tap";
import { bitwiseCrc32c } from "../helpers/bitwise_crc32c.ts";
import { ConfigError } from "../../src/config/config_error.ts";
import { crc32c, crc32cEngineName } from "../../src/runtime/checksum/crc32c.ts";
import { Logger } from "../../src/runtime/logger.ts";
import { chooseCrc32c, type NativeCrc32cOpener } from "../../src/server/crc32c_choice.ts";

function setup() {
  const lines: string[] = [];
  const opened: string[] = [];
  const logger = new Logger({ level: "info", sink: (line) => lines.push(line) });
  const working: NativeCrc32cOpener = (
    path,
  ) => (opened.push(path), { name: `native (${path})`, crc32c: bitwiseCrc32c });
  const missing: NativeCrc32cOpener = (path) => {
    opened.push(path);
    throw new Error(`Cannot open the CRC32C library ${path}: not found`);
  };
  return { lines, opened, logger, working, missing };
}

t.test('"auto" takes the native engine when it opens, and every checksum goes to it', async (t) => {
  const { logger, working, opened, lines } = setup();
  t.equal(
    await chooseCrc32c({ crc32c: "auto", crc32cLibrary: "libisal.so.2" }, working, logger),
    "native (libisal.so.2)",
  );
  t.same(opened, ["libisal.so.2"]);
  t.equal(crc32cEngineName(), "native (libisal.so.2)");
  t.equal(crc32c(new TextEncoder().encode("123456789")), 0xe3069283);
  t.same(lines, [], "nothing to warn of");
});

t.test('"auto" falls back to WebAssembly with a warning naming the key when the library is missing', async (t) => {
  const { logger, missing, lines } = setup();
  t.equal(await chooseCrc32c({ crc32c: "auto", crc32cLibrary: "libnone.so" }, missing, logger), "wasm");
  t.equal(lines.length, 1);
  t.match(lines[0], /"level":"warn".*"key":"\[system\] crc32c_library".*"library":"libnone.so".*not found/);
  t.equal(
    await chooseCrc32c({ crc32c: "auto", crc32cLibrary: "libisal.so.2" }, undefined, logger),
    "wasm",
    "an entry point without an opener",
  );
});

t.test('"auto" refuses an engine that gives wrong checksums, and keeps WebAssembly', async (t) => {
  const { logger, lines } = setup();
  const wrong: NativeCrc32cOpener = () => ({ name: "wrong", crc32c: () => 0 });
  t.equal(await chooseCrc32c({ crc32c: "auto", crc32cLibrary: "libwrong.so" }, wrong, logger), "wasm");
  t.match(lines[0], /Cannot use the CRC32C engine wrong: it gives 00000000/);
});

t.test('"native" stops start-up with a ConfigError naming [system] crc32c when the library is missing', async (t) => {
  const { logger, missing } = setup();
  const error = await chooseCrc32c({ crc32c: "native", crc32cLibrary: "libnone.so" }, missing, logger).catch((
    e,
  ) => e);
  t.ok(error instanceof ConfigError);
  t.equal(error.key, "[system] crc32c");
  t.match(
    error.message,
    /Cannot load config: \[system\] crc32c: "native" but Cannot open the CRC32C library libnone.so/,
  );
  t.ok(error.cause instanceof Error, "keeps its cause");
});

t.test('"wasm" never opens the library', async (t) => {
  const { logger, working, opened } = setup();
  await chooseCrc32c({ crc32c: "auto", crc32cLibrary: "libisal.so.2" }, working, logger);
  t.equal(await chooseCrc32c({ crc32c: "wasm", crc32cLibrary: "libisal.so.2" }, working, logger), "wasm");
  t.same(opened, ["libisal.so.2"], "opened once, by the auto choice before it");
  t.equal(crc32cEngineName(), "wasm");
});
