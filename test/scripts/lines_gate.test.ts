import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import t from "tap";
import { fileLineCount, functionLengths, longerThan } from "../../scripts/lib/line_counts.ts";

// The size limits of src/, measured as `deno task lines` measures them: no file over 400 lines, no
// function over 70 (nested functions counted toward the one that holds them).

const fileLinesMax = 400;
const functionLinesMax = 70;

const srcDir = new URL("../../src/", import.meta.url).pathname;

/** Every `.ts` file under src/, as paths relative to the repository root. */
function sources(): string[] {
  const entries = readdirSync(srcDir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

t.test(`no file in src/ is over ${fileLinesMax} lines and no function over ${functionLinesMax}`, (t) => {
  const root = join(srcDir, "..");
  const files = sources().map((path) => {
    const text = readFileSync(path, "utf8");
    return { path: relative(root, path), lines: fileLineCount(text), functions: functionLengths(text, path) };
  });
  const functions = files.flatMap((file) =>
    file.functions.map((f) => ({ where: `${file.path}:${f.line} ${f.name}`, lines: f.lines }))
  );
  // The walk found the sources: a gate over nothing would pass whatever src/ holds.
  t.ok(files.length > 100, `${files.length} files measured`);
  t.ok(functions.length > 500, `${functions.length} functions measured`);
  t.same(
    longerThan(files, fileLinesMax).map((f) => `${f.path} (${f.lines} lines)`),
    [],
    "files over the limit",
  );
  t.same(
    longerThan(functions, functionLinesMax).map((f) => `${f.where} (${f.lines} lines)`),
    [],
    "functions over the limit",
  );
  t.end();
});
