import { spawnSync } from "node:child_process";
import t from "tap";
import { isalUnavailableReason } from "../../helpers/isal.ts";

const unavailable = isalUnavailableReason();

function agreement(library?: string) {
  const run = spawnSync(
    "deno",
    [
      "run",
      "--allow-ffi",
      "--allow-read",
      "--allow-env",
      "test/helpers/isal_crc32c_agreement.ts",
      ...(library ? [library] : []),
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  return run;
}

t.test("ISA-L's CRC32C agrees with the WebAssembly hasher on 3,000 random ranges up to 2 MiB", {
  skip: unavailable ?? false,
}, (t) => {
  const run = agreement();
  t.equal(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
  t.equal(result.engine, "native (libisal.so.2)");
  t.equal(result.ranges, 3000);
  t.ok(result.bytes > 100 * 1024 * 1024, `${result.bytes} bytes compared`);
  t.equal(result.mismatches, 0);
  t.end();
});

t.test("a library that cannot be opened is an error naming it", (t) => {
  const run = agreement("libno-such-crc.so.9");
  t.not(run.status, 0);
  t.match(run.stderr, /Cannot open the CRC32C library libno-such-crc\.so\.9/);
  t.end();
});
