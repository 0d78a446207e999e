import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import t from "tap";

/**
 * The layers of src/, bottom up. A file may import files of its own folder and of folders with a
 * lower rank, never a higher one, nor another folder of the same rank (log and objectstore know
 * nothing of each other; neither do the HTTP server, the Kafka listener and the HTTP client).
 */
const layerRanks: Record<string, number> = {
  runtime: 0,
  config: 1,
  log: 2,
  objectstore: 2,
  coordinator: 2,
  tier: 3,
  broker: 4,
  cluster: 5,
  groups: 5,
  transactions: 5,
  server: 6,
  kafka: 6,
  client: 6,
  sim: 7,
};

/** Entry points, and the wiring they share with the benchmarks: they may import any layer. */
const entryPoints = new Set(["main.ts", "cluster_io.ts"]);

/**
 * Imports allowed to break the rule, as "importer -> imported" (paths under src/), each with the
 * reason it is allowed. An entry that matches no import fails the test, so the table only shrinks.
 */
const knownExceptions: Record<string, string> = {};

/** Relative specifiers of static and dynamic imports, re-exports, and worker module URLs. */
const specifierPatterns = [
  /\b(?:from|import)\s*\(?\s*"(\.\.?\/[^"]+)"/g,
  /new\s+URL\(\s*"(\.\.?\/[^"]+)"\s*,\s*import\.meta\.url/g,
];

interface Violation {
  importer: string;
  imported: string;
  reason: string;
}

/** The layer-rule violations among `files` (path under src/ to source text). */
function violations(files: Map<string, string>): Violation[] {
  const found: Violation[] = [];
  for (const [importer, text] of files) {
    if (entryPoints.has(importer)) continue;
    const from = layerOf(importer);
    if (from === null) {
      found.push({ importer, imported: "", reason: `${importer} is in no layer of the table` });
      continue;
    }
    for (const pattern of specifierPatterns) {
      for (const match of text.matchAll(pattern)) {
        const imported = posix.normalize(posix.join(posix.dirname(importer), match[1]!));
        const to = layerOf(imported);
        if (to === from) continue;
        if (to === null) {
          found.push({ importer, imported, reason: `${imported} is in no layer of the table` });
        } else if (layerRanks[to]! >= layerRanks[from]!) {
          found.push({
            importer,
            imported,
            reason: `${from} (rank ${layerRanks[from]}) imports ${to} (rank ${layerRanks[to]})`,
          });
        }
      }
    }
  }
  return found;
}

function layerOf(path: string): string | null {
  const folder = path.split("/")[0]!;
  return path.includes("/") && folder in layerRanks ? folder : null;
}

function sourceFiles(root: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(path.slice(root.length).split("\\").join("/"), readFileSync(path, "utf8"));
  }
  return files;
}

t.test("imports in src/ point down the layers only", (t) => {
  const files = sourceFiles(new URL("../src/", import.meta.url).pathname);
  t.ok(files.size > 100, `${files.size} source files scanned`);
  const found = violations(files);
  const key = (v: Violation) => `${v.importer} -> ${v.imported}`;
  const unexpected = found.filter((v) => !(key(v) in knownExceptions));
  t.same(unexpected.map((v) => `${key(v)}: ${v.reason}`), [], "no import from a layer above or beside");
  const stale = Object.keys(knownExceptions).filter((k) => !found.some((v) => key(v) === k));
  t.same(stale, [], "every known exception still occurs");
  t.end();
});

t.test("the scan finds an upward import, a sideways one, a worker URL and a file outside the layers", (t) => {
  const found = violations(
    new Map([
      ["tier/a.ts", 'import { b } from "../server/b.ts";\nimport { c } from "./c.ts";'],
      ["log/d.ts", 'import type {\n  E,\n} from "../objectstore/e.ts";'],
      ["runtime/f.ts", 'const w = new Worker(new URL("../log/g.ts", import.meta.url));'],
      ["broker/h.ts", 'export { i } from "../tier/i.ts";\nconst j = await import("../server/j.ts");'],
      ["wire/k.ts", 'import { l } from "../broker/l.ts";'],
      ["main.ts", 'import { m } from "./server/m.ts";'],
    ]),
  );
  t.same(found.map((v) => `${v.importer} -> ${v.imported}`), [
    "tier/a.ts -> server/b.ts",
    "log/d.ts -> objectstore/e.ts",
    "runtime/f.ts -> log/g.ts",
    "broker/h.ts -> server/j.ts",
    "wire/k.ts -> ",
  ]);
  t.end();
});
