import { readFileSync } from "node:fs";
import { assert } from "../../src/runtime/assert.ts";

/** How `deno task server` starts `deno`: the environment it sets and the arguments it gives. */
export interface ServerTask {
  /** Variables the task sets for the process (`NAME=value` words before `deno`). */
  env: Record<string, string>;
  /** The arguments after `deno`: `run`, permissions, V8 flags, entry point. */
  args: string[];
}

/**
 * The server task of deno.json, read so that a test or benchmark that spawns the server runs it
 * exactly as the task does, and its environment and flags live in one place.
 */
export function serverTask(task: unknown = readTasks().server): ServerTask {
  assert(typeof task === "string", "Cannot read the server task: deno.json has no tasks.server");
  const { env, command } = taskEnv(task);
  assert(
    command[0] === "deno" && command[1] === "run" && command.at(-1) === "src/main.ts",
    `Cannot read the server task: expected "[NAME=value ...] deno run ... src/main.ts", found "${task}"`,
  );
  return { env, args: command.slice(1) };
}

/** A task's leading `NAME=value` words as an environment, and the words of the command after them. */
export function taskEnv(task: string): { env: Record<string, string>; command: string[] } {
  const words = task.split(/\s+/).filter((w) => w.length > 0);
  const env: Record<string, string> = {};
  let at = 0;
  for (; at < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[at]!); at++) {
    const word = words[at]!;
    env[word.slice(0, word.indexOf("="))] = word.slice(word.indexOf("=") + 1);
  }
  return { env, command: words.slice(at) };
}

/** The arguments `deno task server` gives `deno` (see `serverTask`). */
export function serverTaskArgs(): string[] {
  return serverTask().args;
}

/** The tasks of deno.json. */
export function readTasks(): Record<string, unknown> {
  const denoJson = JSON.parse(readFileSync(new URL("../../deno.json", import.meta.url), "utf8"));
  return denoJson?.tasks ?? {};
}
