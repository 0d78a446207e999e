import { readFileSync } from "node:fs";
import t from "tap";
import { diagnosticLinesMax, failuresKeptMax, TapFailureCollector } from "../../scripts/lib/tap_failures.ts";

// tap's raw output for a file with a failed assertion two subtests deep and one at the first level.
const sample = readFileSync(new URL("./fixtures/tap_failures.tap", import.meta.url), "utf8");

t.test("each failure is kept once, at its innermost report, with the subtests that hold it", (t) => {
  const collector = new TapFailureCollector();
  collector.push(sample);
  collector.end();
  t.same(collector.failures.map((f) => [...f.path, f.name].join(" > ")), [
    "test/zz_tmp.test.ts > outer > inner a > one is two",
    "test/zz_tmp.test.ts > second > should be equivalent",
  ]);
  t.equal(collector.failures[0]!.diagnostics[0], "  ---");
  t.match(collector.failures[0]!.diagnostics.join("\n"), /compare: ===/);
  t.notMatch(
    collector.failures[0]!.diagnostics.join("\n"),
    /ok 2 - should be equal/,
    "the block ends at `...`",
  );
  t.match(collector.report(), /^\n# Failures\nnot ok: test\/zz_tmp.test.ts > outer > inner a > one is two\n/);
  t.end();
});

t.test("lines split across chunks are joined; a passing run reports nothing", (t) => {
  const whole = new TapFailureCollector();
  whole.push(sample);
  whole.end();
  const split = new TapFailureCollector();
  for (let i = 0; i < sample.length; i += 7) split.push(sample.slice(i, i + 7));
  split.end();
  t.same(split.failures, whole.failures);
  const passing = new TapFailureCollector();
  passing.push(
    "TAP version 14\n# Subtest: test/a.test.ts\n    ok 1 - fine\n    1..1\nok 1 - test/a.test.ts\n",
  );
  passing.end();
  t.same(passing.failures, []);
  t.equal(passing.report(), "");
  t.end();
});

t.test("a file that fails with nothing failed inside it (a timeout) is kept at the top level", (t) => {
  const collector = new TapFailureCollector();
  collector.push(
    "# Subtest: test/slow.test.ts\n    ok 1 - fine\nnot ok 1 - test/slow.test.ts # time=300000ms\n  ---\n  signal: SIGTERM\n  ...\n",
  );
  collector.end();
  t.same(collector.failures, [{
    path: [],
    name: "test/slow.test.ts",
    diagnostics: ["  ---", "  signal: SIGTERM"],
  }]);
  t.end();
});

t.test("failures and their diagnostics are bounded; the ones dropped are counted", (t) => {
  const collector = new TapFailureCollector();
  collector.push("# Subtest: test/many.test.ts\n");
  for (let i = 0; i < failuresKeptMax + 5; i++) {
    collector.push(`    not ok ${i + 1} - failure ${i}\n      ---\n`);
    for (let j = 0; j < diagnosticLinesMax + 3; j++) collector.push(`      line ${j}\n`);
    collector.push("      ...\n");
  }
  collector.end();
  t.equal(collector.failures.length, failuresKeptMax);
  t.equal(collector.failuresDropped, 5);
  t.equal(collector.failures[0]!.diagnostics.length, diagnosticLinesMax);
  t.match(collector.report(), /\(5 more failures not repeated here\)$/);
  t.end();
});
