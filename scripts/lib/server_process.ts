import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { serverTask } from "./server_task.ts";

/** Bytes of the server's standard error kept for error messages: the end of it. */
const stderrTailBytesMax = 64 * 1024;

/** A server started as `deno task server` starts it, in a process of its own. */
export interface ServerProcess {
  readonly pid: number;
  readonly baseUrl: string;
  /** Milliseconds (performance.now) when the process was spawned and when it said it listens. */
  readonly spawnedAtMs: number;
  readonly listeningAtMs: number;
  /** The last 64 KiB the server wrote to standard error. */
  stderrTail(): string;
  /** Sends `signal` (when the process still runs) and resolves with the exit code, or null after a signal. */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns the server with the arguments and environment of deno.json's `server` task, from the
 * repository's root, and resolves once its log says it listens; a process that exits first, or is
 * not listening within `listenTimeoutMs`, rejects with the end of its standard error.
 */
export async function startServerProcess(
  configPath: string,
  listenTimeoutMs: number,
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const task = serverTask();
  const spawnedAtMs = performance.now();
  const child = spawn("deno", [...task.args, "--config", configPath], {
    cwd: new URL("../..", import.meta.url).pathname,
    // The Kafka listener on a free port unless `env` names one, as the HTTP API's is in the config.
    env: { ...process.env, ...task.env, STRATA_KAFKA_ADDRESS: "127.0.0.1:0", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = once(child, "exit");
  let tail = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    tail = (tail + chunk).slice(-stderrTailBytesMax);
  });
  const address = await listeningAddress(child, () => tail, listenTimeoutMs);
  const listeningAtMs = performance.now();
  return {
    pid: child.pid!,
    baseUrl: `http://${address}`,
    spawnedAtMs,
    listeningAtMs,
    stderrTail: () => tail,
    stop: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}

function listeningAddress(child: ChildProcess, tail: () => string, timeoutMs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const finish = (outcome: () => void) => {
      clearTimeout(timer);
      child.stderr!.off("data", onData);
      child.off("exit", onExit);
      outcome();
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish(() =>
        reject(new Error(`Cannot start the server: not listening after ${timeoutMs} ms: ${tail()}`))
      );
    }, timeoutMs);
    const onData = () => {
      const match = /"msg":"listening","address":"([^"]+)"/.exec(tail());
      if (match !== null) finish(() => resolve(match[1]!));
    };
    const onExit = (code: number | null) =>
      finish(() =>
        reject(new Error(`Cannot start the server: it exited with ${code} before listening: ${tail()}`))
      );
    child.stderr!.on("data", onData);
    child.once("exit", onExit);
  });
}
