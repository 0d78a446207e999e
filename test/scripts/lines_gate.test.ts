import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import t from "tap";
import { fileLineCount, functionLengths, longerThan } from "../../scripts/lib/line_counts.ts";

// The size limits of src/, measured as `deno task lines` measures them: no function over 70 lines
// (nested functions counted toward the one that holds them). A file over about 500 lines is worth a
// look, not a failure: files are cut by concept, and the list of longer ones is printed as a warning.

const fileLinesWarning = 500;
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

t.test(`no function in src/ is over ${functionLinesMax} lines; files over ${fileLinesWarning} are named`, (t) => {
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
  for (const file of longerThan(files, fileLinesWarning)) {
    t.comment(`warning: ${file.path} has ${file.lines} lines; does it hold more than one concept?`);
  }
  t.same(
    longerThan(functions, functionLinesMax).map((f) => `${f.where} (${f.lines} lines)`),
    [],
    "functions over the limit",
  );
  t.end();
});
