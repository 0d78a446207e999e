import { readFileSync } from "node:fs";
import { assert } from "../../src/runtime/assert.ts";

/**
 * The arguments `deno task server` gives `deno` (permissions, V8 flags, entry point), read from
 * deno.json, so that a test or benchmark that spawns the server runs it exactly as the task does and
 * the flags live in one place.
 */
export function serverTaskArgs(): string[] {
  const denoJson = JSON.parse(readFileSync(new URL("../../deno.json", import.meta.url), "utf8"));
  const task: unknown = denoJson?.tasks?.server;
  assert(typeof task === "string", "Cannot read the server task: deno.json has no tasks.server");
  const words = task.split(/\s+/).filter((w) => w.length > 0);
  assert(
    words[0] === "deno" && words[1] === "run" && words.at(-1) === "src/main.ts",
    `Cannot read the server task: expected "deno run ... src/main.ts", found "${task}"`,
  );
  return words.slice(1);
}
