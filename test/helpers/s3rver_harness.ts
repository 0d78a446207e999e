import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import type { S3Endpoint } from "./s3_harness.ts";

/** Starts s3rver in a child process on 127.0.0.1 and stops it when the test ends. */
export async function startS3rver(t: Test): Promise<S3Endpoint> {
  const dir = mkdtempSync(join(tmpdir(), "strata-s3rver-"));
  const child = spawn(
    process.execPath,
    ["--openssl-legacy-provider", new URL("../../scripts/s3rver.mjs", import.meta.url).pathname, dir],
    { stdio: ["ignore", "pipe", "inherit"], env: process.env },
  );
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const match = /port (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code}`)));
  });
  return { endpoint: `http://127.0.0.1:${port}`, accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
}
