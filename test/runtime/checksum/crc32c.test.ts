import t from "tap";
import { bitwiseCrc32c } from "../../helpers/bitwise_crc32c.ts";
import {
  crc32c,
  crc32cEngineName,
  crc32cOfRange,
  crc32cOfRangeBytesMax,
  initCrc32c,
  useCrc32cEngine,
} from "../../../src/runtime/checksum/crc32c.ts";

t.test("the WebAssembly engine gives the standard check value and the bitwise CRC's answers", async (t) => {
  await initCrc32c();
  t.equal(crc32cEngineName(), "wasm");
  t.equal(crc32c(new TextEncoder().encode("123456789")), 0xe3069283, "CRC-32C's check value");
  t.equal(crc32c(new Uint8Array(0)), 0, "the empty input");
  const bytes = new Uint8Array(5000).map((_, i) => (i * 7919) >>> 3);
  for (const length of [1, 3, 4, 8, 15, 64, 1000, 4999]) {
    t.equal(
      crc32c(bytes.subarray(1, 1 + length)),
      bitwiseCrc32c(bytes.subarray(1, 1 + length)),
      `${length} bytes`,
    );
  }
});

t.test("an engine that agrees everywhere is taken and serves every later call", async (t) => {
  await initCrc32c();
  let calls = 0;
  useCrc32cEngine({ name: "bitwise", crc32c: (data) => (calls++, bitwiseCrc32c(data)) });
  t.equal(crc32cEngineName(), "bitwise");
  const before = calls;
  t.equal(crc32c(new TextEncoder().encode("123456789")), 0xe3069283);
  t.equal(calls, before + 1, "the call went to the engine taken");
  await initCrc32c();
  t.equal(crc32cEngineName(), "wasm", "initCrc32c puts WebAssembly back");
});

t.test("an engine that is wrong anywhere is refused and the one in use stays", async (t) => {
  await initCrc32c();
  t.throws(
    () => useCrc32cEngine({ name: "crc32", crc32c: () => 0xcbf43926 }),
    /Cannot use the CRC32C engine crc32: it gives cbf43926 for "123456789", not e3069283/,
  );
  // Right on the check value, wrong past 512 bytes (as an engine that mishandles long input would be).
  const longWrong = (data: Uint8Array) => data.length > 512 ? bitwiseCrc32c(data) ^ 1 : bitwiseCrc32c(data);
  t.throws(
    () => useCrc32cEngine({ name: "short", crc32c: longWrong }),
    /Cannot use the CRC32C engine short: it differs from WebAssembly's on 513 bytes/,
  );
  // Right for aligned starts only.
  const alignedOnly = (data: Uint8Array) => data.byteOffset % 8 === 0 ? bitwiseCrc32c(data) : 0;
  t.throws(() => useCrc32cEngine({ name: "aligned", crc32c: alignedOnly }), /differs from WebAssembly's/);
  t.equal(crc32cEngineName(), "wasm");
});

t.test("crc32cOfRange agrees with the bitwise CRC on every small range, and refuses a large one", (t) => {
  const bytes = new Uint8Array(600).map((_, i) => (i * 2654435761) >>> 24);
  t.equal(crc32cOfRange(new TextEncoder().encode("123456789"), 0, 9), 0xe3069283, "CRC-32C's check value");
  for (let length = 0; length <= crc32cOfRangeBytesMax; length++) {
    const from = length % 13;
    if (crc32cOfRange(bytes, from, from + length) !== bitwiseCrc32c(bytes.subarray(from, from + length))) {
      t.fail(`${length} bytes from ${from}`);
    }
  }
  t.throws(() => crc32cOfRange(bytes, 0, crc32cOfRangeBytesMax + 1), /at most 256 bytes/);
  t.throws(() => crc32cOfRange(bytes, 590, 610), /inside the array/);
  t.end();
});
