import t from "tap";
import { formatBytes, formatDurationMs, parseBytes, parseDurationMs } from "../../src/config/units.ts";

t.test("sizes parse with binary and decimal units; a bare number is bytes", (t) => {
  t.equal(parseBytes("1 MiB"), 1048576);
  t.equal(parseBytes("4GiB"), 4 * 2 ** 30);
  t.equal(parseBytes("1.5 KiB"), 1536);
  t.equal(parseBytes("10 MB"), 10_000_000);
  t.equal(parseBytes("4096"), 4096);
  t.equal(parseBytes(4096), 4096);
  for (const bad of ["", "MiB", "1 parsec", "-1", "1.5 B", "0.1"]) {
    t.equal(parseBytes(bad), null, `"${bad}" is refused`);
  }
  t.equal(parseBytes(-1), null);
  t.equal(parseBytes(1.5), null);
  t.end();
});

t.test("durations parse with units; a bare number is milliseconds", (t) => {
  t.equal(parseDurationMs("90 s"), 90_000);
  t.equal(parseDurationMs("10 ms"), 10);
  t.equal(parseDurationMs("5 m"), 300_000);
  t.equal(parseDurationMs("1 h"), 3_600_000);
  t.equal(parseDurationMs("1 d"), 86_400_000);
  t.equal(parseDurationMs("0.5 s"), 500);
  t.equal(parseDurationMs("250"), 250);
  for (const bad of ["fast", "10 years", "", "0.5 ms"]) {
    t.equal(parseDurationMs(bad), null, `"${bad}" is refused`);
  }
  t.end();
});

t.test("formatting is the inverse for whole units", (t) => {
  t.equal(formatBytes(1048576), "1 MiB");
  t.equal(formatBytes(1536), "1536 B");
  t.equal(formatDurationMs(90_000), "90 s");
  t.equal(formatDurationMs(10), "10 ms");
  t.equal(formatDurationMs(86_400_000), "1 d");
  t.end();
});
