import { execFile, execFileSync } from "node:child_process";

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

/** Runs kcat with `args` (and `input` on its standard input), killed after `timeoutMs`. */
export function kcat(args: string[], input = "", timeoutMs = 30_000): Promise<KcatResult> {
  return new Promise((resolve) => {
    const child = execFile(
      "kcat",
      args,
      { timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin!.end(input);
  });
}

/** The Kafka listener's address from a server's log. */
export function kafkaAddressOf(stderr: string): string {
  const match = /"msg":"kafka listening","address":"([^"]+)"/.exec(stderr);
  if (match === null) throw new Error(`the server logged no Kafka address: ${stderr.slice(-2000)}`);
  return match[1]!;
}
