import { execFile, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";

/** Why kcat cannot run here, or null when it can. */
export function kcatUnavailable(): string | null {
  try {
    execFileSync("kcat", ["-V"], { stdio: "ignore" });
    return null;
  } catch {
    return "kcat is not installed (Debian: apt-get install -y kcat; .ci/run installs it)";
  }
}

export interface KcatResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The exit code a kcat killed at its timeout is reported with (timeout(1)'s). */
export const timedOutCode = 124;

/** Runs kcat with `args` (and `input` on its standard input), killed after `timeoutMs`. */
export async function kcat(
  args: string[],
  input: string | Uint8Array = "",
  timeoutMs = 30_000,
): Promise<KcatResult> {
  const { code, stdout, stderr } = await kcatBytes(args, input, timeoutMs);
  return { code, stdout: new TextDecoder().decode(stdout), stderr };
}

/** `kcat`, with its standard output as bytes. */
export function kcatBytes(
  args: string[],
  input: string | Uint8Array = "",
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  return new Promise((resolve) => {
    const options = { timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024, encoding: "buffer" as const };
    const child = execFile("kcat", args, options, (error, stdout, stderr) => {
      // kcat stops gracefully on the SIGTERM of the timeout and exits 0: a timeout is told apart by
      // the kill, and answered as timeout(1) answers one.
      if (child.killed) {
        const told = `${stderr.toString("utf8")}\n(kcat killed after ${timeoutMs} ms)`;
        return resolve({ code: timedOutCode, stdout: new Uint8Array(stdout), stderr: told });
      }
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout: new Uint8Array(stdout), stderr: stderr.toString("utf8") });
    });
    // kcat may exit before it has read all of its input (a refused produce): its exit code and
    // standard error say how it ended, so a broken pipe here is not the test's failure.
    child.stdin!.on("error", () => {});
    child.stdin!.end(input);
  });
}

/** The Kafka listener's address from a server's log. */
export function kafkaAddressOf(stderr: string): string {
  const match = /"msg":"kafka listening","address":"([^"]+)"/.exec(stderr);
  if (match === null) throw new Error(`the server logged no Kafka address: ${stderr.slice(-2000)}`);
  return match[1]!;
}

/** A kcat producer that runs while lines are written to it, one record per line. */
export interface KcatProducer {
  write(line: string): void;
  /** Closes its input and waits: kcat exits 0 once every record is delivered, 1 when any was not. */
  end(timeoutMs?: number): Promise<{ code: number; stderr: string }>;
}

/** Starts `kcat -P` with `args`; its standard input stays open until `end`. */
export function spawnKcatProducer(args: string[]): KcatProducer {
  const child = spawn("kcat", ["-P", ...args], { stdio: ["pipe", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  child.stdin!.on("error", () => {});
  const exited = once(child, "exit");
  return {
    write: (line) => child.stdin!.write(`${line}\n`),
    end: async (timeoutMs = 60_000) => {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const [code] = await exited;
      clearTimeout(timer);
      return { code: typeof code === "number" ? code : 1, stderr };
    },
  };
}
