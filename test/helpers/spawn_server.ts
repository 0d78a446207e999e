import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { serverTask } from "../../scripts/lib/server_task.ts";

export interface RunningServer {
  child: ChildProcess;
  baseUrl: string;
  /** Everything the server wrote to standard error so far. */
  stderr(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `deno run` of the entry point exactly as `deno task server` runs it, with the task's environment. */
function spawnDeno(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; stderr: () => string } {
  const task = serverTask();
  const child = spawn(
    "deno",
    [...task.args, ...args],
    {
      cwd: new URL("../..", import.meta.url).pathname,
      // Port 0 for the Kafka listener too, unless the test names one: tests run side by side.
      env: { ...process.env, ...task.env, STRATA_KAFKA_ADDRESS: "127.0.0.1:0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let err = "";
  child.stderr!.on("data", (chunk) => (err += chunk));
  child.stdout!.resume();
  return { child, stderr: () => err };
}

/**
 * Starts the real server with `deno run`, waits for its "listening" log line and returns its
 * address. The config should set port 0 so tests never collide on a port.
 */
export async function spawnServer(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<RunningServer> {
  const { child, stderr } = spawnDeno(args, env);
  const exited = once(child, "exit");
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not listen within ${timeoutMs} ms: ${stderr()}`)),
      timeoutMs,
    );
    const onData = () => {
      const match = /"msg":"listening","address":"([^"]+)"/.exec(stderr());
      if (match) {
        clearTimeout(timer);
        child.stderr!.off("data", onData);
        resolve(match[1]!);
      }
    };
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening: ${stderr()}`));
    });
  });
  return {
    child,
    baseUrl: `http://${address}`,
    stderr,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null) child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}

/** Runs the server expecting it to fail at start-up; resolves with its exit code and stderr. */
export async function runServerExpectingFailure(args: string[], env: Record<string, string> = {}) {
  const { child, stderr } = spawnDeno(args, env);
  const [code] = await once(child, "exit");
  return { code: code as number | null, stderr: stderr() };
}
