import { TapFailureCollector } from "./lib/tap_failures.ts";

/**
 * Runs the tap suite under Node (tap cannot run under Deno) and ends with the line CI reads,
 * `N passed, N failed`, taken from tap's own final counts. Extra arguments go to tap, so
 * `deno task test test/runtime` runs one folder. Every failure is repeated just before that line,
 * with the subtests that hold it and tap's diagnostics, so the end of the log names what failed.
 * The exit code is tap's, or 1 when its counts could not be read.
 */

const args = ["node_modules/.bin/tap", "--reporter=tap", ...Deno.args];
const child = new Deno.Command("node", { args, stdout: "piped", stderr: "inherit" }).spawn();

let tail = "";
const decoder = new TextDecoder();
const failures = new TapFailureCollector();
for await (const chunk of child.stdout) {
  await Deno.stdout.write(chunk);
  const text = decoder.decode(chunk, { stream: true });
  failures.push(text);
  // Only the end of the stream matters for the counts; keep it bounded.
  tail = (tail + text).slice(-65536);
}
const status = await child.status;
failures.end();
const failureReport = failures.report();
if (failureReport !== "") console.log(failureReport);

// tap's raw output closes with a line like `# { total: 12, pass: 11, fail: 1, skip: 0 }`.
const summary = [...tail.matchAll(/^# \{ total: (\d+)(.*)\}$/gm)].at(-1);
if (summary === undefined) {
  console.log("0 passed, 1 failed");
  console.error("Cannot report test counts: tap printed no summary line");
  Deno.exit(status.code === 0 ? 1 : status.code);
}
const count = (name: string) => Number(new RegExp(`${name}: (\\d+)`).exec(summary[2]!)?.[1] ?? 0);
const skipped = count("skip") + count("todo");
console.log(`\n${count("pass")} passed, ${count("fail")} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
Deno.exit(status.code);
