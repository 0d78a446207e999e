import { readFileSync } from "node:fs";
import t from "tap";
import { runDenoTask } from "../helpers/run_task.ts";

/**
 * docs/ARCHITECTURE.md lists, in "The path of a Kafka produce" and "The path of a cold fetch", every
 * file of src/ the request runs through, as `deno task paths` (scripts/path_walk.ts) measures it.
 * This runs the walk and checks that each section names every file the walk found, once, and no
 * other: a file that joins or leaves a path fails here until the doc says so. A section's list is
 * every backticked `src/….ts` in it, in order.
 */

const root = new URL("../../", import.meta.url).pathname;

/** Each walked path, and the heading of the section of docs/ARCHITECTURE.md that lists its files. */
export const pathSections = {
  produce: "The path of a Kafka produce",
  cold_fetch: "The path of a cold fetch",
} as const;

/** The text under `## heading`, up to the next heading of its level or above; null when there is none. */
export function sectionText(doc: string, heading: string): string | null {
  const lines = doc.split("\n");
  const start = lines.findIndex((line) => line.trimEnd() === `## ${heading}`);
  if (start < 0) return null;
  const end = lines.findIndex((line, i) => i > start && /^#{1,2} /.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** The files a section lists: each backticked `src/….ts`, relative to src/ as the walk gives them, in order. */
export function listedFiles(section: string): string[] {
  return [...section.matchAll(/`src\/([^`\s]+\.ts)`/g)].map((match) => match[1]!);
}

/** How a section's list differs from a walk's files; all three empty when they agree. */
export interface ListDifference {
  /** Files the list names more than once. */
  duplicated: string[];
  /** Files the walk found that the list does not name. */
  missingFromDoc: string[];
  /** Files the list names that the walk did not find. */
  notWalked: string[];
}

export function listDifference(listed: readonly string[], walked: readonly string[]): ListDifference {
  const seen = new Set<string>();
  const duplicated = new Set<string>();
  for (const file of listed) {
    if (seen.has(file)) duplicated.add(file);
    seen.add(file);
  }
  const found = new Set(walked);
  return {
    duplicated: [...duplicated].sort(),
    missingFromDoc: [...found].filter((file) => !seen.has(file)).sort(),
    notWalked: [...seen].filter((file) => !found.has(file)).sort(),
  };
}

const agreement: ListDifference = { duplicated: [], missingFromDoc: [], notWalked: [] };

// The walk starts a server and takes about ten seconds, up to 90 on a loaded machine of two cores.
t.test(
  "each measured path's section lists exactly the files the walk finds",
  { timeout: 300_000 },
  async (t) => {
    const { code, out, err } = await runDenoTask("paths", ["--json"]);
    t.equal(code, 0, `deno task paths exits 0: ${err.slice(-2000)}`);
    if (code !== 0) return;
    const walked = JSON.parse(out) as Record<string, string[]>;
    const doc = readFileSync(`${root}docs/ARCHITECTURE.md`, "utf8");
    t.same(
      Object.keys(walked).sort(),
      Object.keys(pathSections).sort(),
      "the walk measures the paths the doc lists",
    );
    for (const [path, heading] of Object.entries(pathSections)) {
      const files = walked[path] ?? [];
      // A walk that found nothing would agree with an empty section: the check would check nothing.
      t.ok(files.length >= 10, `the ${path} walk found ${files.length} files`);
      const section = sectionText(doc, heading);
      t.not(section, null, `docs/ARCHITECTURE.md has the section "${heading}"`);
      t.same(
        listDifference(listedFiles(section ?? ""), files),
        agreement,
        `"${heading}" lists each file of the ${path} walk once, and no other`,
      );
    }
  },
);

t.test("the check finds a duplicate, a missing file and an extra one in a section", (t) => {
  const doc = [
    "# Architecture",
    "## The path of a Kafka produce",
    "Measured; the listener of `main.ts`, and `virtual_clock.ts` for `RealClock`.",
    "",
    "1. `src/kafka/kafka_connection.ts`: the connection.",
    "2. `src/log/segment/segment.ts`: the write buffer, and `src/kafka/kafka_connection.ts` again.",
    "3. `src/tier/gone.ts`: a file the walk did not find.",
    "### A subsection, still the section's",
    "4. `src/runtime/assert.ts`: assert.",
    "## The path of a cold fetch",
    "1. `src/runtime/clock/virtual_clock.ts`: the clock.",
  ].join("\n");
  const produce = sectionText(doc, "The path of a Kafka produce")!;
  t.same(listedFiles(produce), [
    "kafka/kafka_connection.ts",
    "log/segment/segment.ts",
    "kafka/kafka_connection.ts",
    "tier/gone.ts",
    "runtime/assert.ts",
  ]);
  const walked = [
    "kafka/kafka_connection.ts",
    "log/segment/segment.ts",
    "runtime/assert.ts",
    "log/partition/write_queue.ts",
  ];
  t.same(listDifference(listedFiles(produce), walked), {
    duplicated: ["kafka/kafka_connection.ts"],
    missingFromDoc: ["log/partition/write_queue.ts"],
    notWalked: ["tier/gone.ts"],
  });
  t.same(listedFiles(sectionText(doc, "The path of a cold fetch")!), ["runtime/clock/virtual_clock.ts"]);
  t.equal(sectionText(doc, "The path of a message"), null, "a missing section is null");
  t.same(listDifference(["a.ts", "b.ts"], ["b.ts", "a.ts"]), agreement, "the order does not matter");
  t.end();
});
