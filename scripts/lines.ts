import { parseArgs } from "node:util";
import { fileLineCount, type FunctionLength, functionLengths, longerThan } from "./lib/line_counts.ts";

/**
 * Prints the longest files and the longest functions of the TypeScript sources under `src/` (or the
 * directories given), measured as `scripts/lib/line_counts.ts` says: a file by its lines, a function
 * by the lines it spans, functions nested in another counted toward the one that holds them.
 *
 *   deno task lines [--top 10] [--max-file-lines 500] [--max-function-lines 70] [DIR ...]
 *
 * With a limit given, every file or function over it is listed as well, and the exit code is 1 when
 * there is one; without, it is 0.
 */

const { values: args, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    top: { type: "string", default: "10" },
    "max-file-lines": { type: "string" },
    "max-function-lines": { type: "string" },
  },
});

function count(name: string, value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    console.error(`Cannot read --${name}: expected a positive integer, got ${JSON.stringify(value)}`);
    Deno.exit(2);
  }
  return n;
}

const top = count("top", args.top)!;
const maxFileLines = count("max-file-lines", args["max-file-lines"]);
const maxFunctionLines = count("max-function-lines", args["max-function-lines"]);

/** Every `.ts` file under `dir`, sorted; the walk's depth is bounded by the tree itself. */
async function sources(dir: string): Promise<string[]> {
  const found: string[] = [];
  const entries = [];
  for await (const entry of Deno.readDir(dir)) entries.push(entry);
  entries.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const entry of entries) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...await sources(path));
    else if (entry.isFile && entry.name.endsWith(".ts")) found.push(path);
  }
  return found;
}

interface Measured {
  path: string;
  lines: number;
  functions: FunctionLength[];
}

const measured: Measured[] = [];
for (const root of positionals.length > 0 ? positionals : ["src"]) {
  for (const path of await sources(root.replace(/\/$/, ""))) {
    const text = await Deno.readTextFile(path);
    measured.push({ path, lines: fileLineCount(text), functions: functionLengths(text, path) });
  }
}

const files = measured.toSorted((a, b) => b.lines - a.lines || (a.path < b.path ? -1 : 1));
const functions = measured
  .flatMap((file) => file.functions.map((f) => ({ ...f, where: `${file.path}:${f.line}` })))
  .toSorted((a, b) => b.lines - a.lines || (a.where < b.where ? -1 : 1));

const row = (lines: number, what: string) => `${String(lines).padStart(6)}  ${what}`;
console.log(`Longest files (lines), of ${files.length}:`);
for (const file of files.slice(0, top)) console.log(row(file.lines, file.path));
console.log(`\nLongest functions (lines, nested functions included), of ${functions.length}:`);
for (const f of functions.slice(0, top)) console.log(row(f.lines, `${f.where}  ${f.name}`));

let over = 0;
if (maxFileLines !== null) {
  const long = longerThan(files, maxFileLines);
  console.log(`\nFiles over ${maxFileLines} lines: ${long.length}`);
  for (const file of long) console.log(row(file.lines, file.path));
  over += long.length;
}
if (maxFunctionLines !== null) {
  const long = longerThan(functions, maxFunctionLines);
  console.log(`\nFunctions over ${maxFunctionLines} lines: ${long.length}`);
  for (const f of long) console.log(row(f.lines, `${f.where}  ${f.name}`));
  over += long.length;
}
Deno.exit(over > 0 ? 1 : 0);
