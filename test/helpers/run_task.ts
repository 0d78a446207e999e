import { spawn } from "node:child_process";
import { once } from "node:events";

/** Runs `deno task <task>` from the repository's root, as a user would; its exit code and output. */
export async function runDenoTask(
  task: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn("deno", ["task", "--quiet", task, ...args], {
    cwd: new URL("../..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const [code] = await once(child, "exit");
  return { code: code as number | null, out, err };
}
