import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import type { S3Endpoint } from "./s3_harness.ts";

/** An s3rver that a test can stop and start again: the same port, the same objects. */
export interface ControlledS3rver {
  endpoint: S3Endpoint;
  /** Stops the process (SIGKILL: connections refused at once, as a store that went away). */
  stop(): Promise<void>;
  /** Starts it again on the same port over the same directory. */
  restart(): Promise<void>;
}

/** Starts s3rver in a child process on 127.0.0.1 and stops it when the test ends. */
export async function startS3rver(t: Test): Promise<S3Endpoint> {
  return (await startControlledS3rver(t)).endpoint;
}

/** As `startS3rver`, with `stop` and `restart` for outages. */
export async function startControlledS3rver(t: Test): Promise<ControlledS3rver> {
  const dir = mkdtempSync(join(tmpdir(), "strata-s3rver-"));
  let running = spawnS3rver(dir, 0);
  t.teardown(async () => {
    await running.stop("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });
  const port = await running.port;
  return {
    endpoint: { endpoint: `http://127.0.0.1:${port}`, accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    stop: () => running.stop("SIGKILL"),
    restart: async () => {
      await running.stop("SIGKILL");
      running = spawnS3rver(dir, port);
      const again = await running.port;
      if (again !== port) throw new Error(`Cannot restart s3rver: it listens on ${again}, not ${port}`);
    },
  };
}

function spawnS3rver(dir: string, port: number) {
  const child = spawn(
    process.execPath,
    [
      "--openssl-legacy-provider",
      new URL("../../../scripts/s3rver.mjs", import.meta.url).pathname,
      dir,
      String(port),
    ],
    { stdio: ["ignore", "pipe", "inherit"], env: process.env },
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const listening = new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const match = /port (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code}`)));
  });
  const stop = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { port: listening, stop };
}
