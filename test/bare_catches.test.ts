import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import t from "tap";

/**
 * A failure dropped without a word is lost: every catch in src/ that drops what it caught (a
 * `catch {` block, a `.catch(() => {})`, `.catch(() => null)` or the like, a rejection handler that
 * does nothing) says why the error is safe to drop, in a comment on its line, just above it, or as
 * the block's first line, and where it is counted or logged instead when it is. A handler that
 * names the error and rethrows what it does not expect is no bare catch.
 */

/** How many lines above a bare catch its comment may start. */
const commentLinesAboveMax = 3;

const bareCatchPatterns = [
  /\bcatch\s*\{/,
  /\.catch\(\s*\(\)\s*=>\s*(\{\s*\}|null|undefined|0|false|\[\][^)]*)\s*\)/,
  /\.then\(.*,\s*\(\)\s*=>\s*\{\s*\}\s*\)/,
];

interface BareCatch {
  where: string;
  commented: boolean;
}

/** The bare catches of `text`, each with whether a comment explains it. */
function bareCatches(path: string, text: string): BareCatch[] {
  const lines = text.split("\n");
  const found: BareCatch[] = [];
  lines.forEach((line, i) => {
    if (line.trimStart().startsWith("//") || line.trimStart().startsWith("*")) return;
    if (!bareCatchPatterns.some((pattern) => pattern.test(line))) return;
    const above = lines.slice(Math.max(0, i - commentLinesAboveMax), i);
    const blockFirst = /\bcatch\s*\{\s*$/.test(line) ? lines[i + 1] ?? "" : "";
    const commented = line.includes("//") || above.some((l) => l.trimStart().startsWith("//")) ||
      blockFirst.trimStart().startsWith("//");
    found.push({ where: `${path}:${i + 1}`, commented });
  });
  return found;
}

const srcDir = new URL("../src/", import.meta.url).pathname;

function sources(): string[] {
  return readdirSync(srcDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

t.test("every bare catch in src/ says why what it drops is safe to drop", (t) => {
  const root = join(srcDir, "..");
  const all = sources().flatMap((path) => bareCatches(relative(root, path), readFileSync(path, "utf8")));
  t.ok(sources().length > 100, "the walk found the sources");
  t.comment(`${all.length} bare catches in src/`);
  t.same(all.filter((c) => !c.commented).map((c) => c.where), [], "bare catches without a comment");
  t.end();
});

t.test("the check finds bare catches and their comments", (t) => {
  const text = [
    "try {",
    "  f();",
    "} catch {",
    "  return null;",
    "}",
    "// The chain goes on: the caller heard of it.",
    "p.catch(() => {});",
    "q.then(() => 1, () => {});",
    "try { g(); } catch (error) { if (!(error instanceof E)) throw error; }",
  ].join("\n");
  t.same(bareCatches("x.ts", text), [
    { where: "x.ts:3", commented: false },
    { where: "x.ts:7", commented: true },
    { where: "x.ts:8", commented: true },
  ]);
  t.same(bareCatches("y.ts", "a();\nb();\nc();\nd();\nq.then(() => 1, () => {});"), [
    { where: "y.ts:5", commented: false },
  ], "a comment further up does not count");
  t.end();
});
