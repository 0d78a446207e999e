import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import type { S3Endpoint } from "./s3_harness.ts";

const scripts = new URL("../../../scripts/", import.meta.url).pathname;

/** Why RGW cannot run here, or null when its packages are installed. */
export function rgwUnavailableReason(): string | null {
  const found = spawnSync("sh", ["-c", "command -v radosgw && command -v ceph-mon && command -v ceph-osd"], {
    encoding: "utf8",
  });
  return found.status === 0
    ? null
    : "Ceph RGW is not installed (apt-get install radosgw ceph-mon ceph-osd; .ci/run does this)";
}

/**
 * Starts a throw-away RGW on 127.0.0.1 with scripts/rgw-start.sh (about 7 to 11 s) and stops and
 * wipes it when the test ends. Only one can run at a time: the monitor's ports are fixed.
 */
export function startRgw(t: Test, port = 7480): S3Endpoint {
  const data = mkdtempSync(join(tmpdir(), "strata-rgw-"));
  const env = { ...process.env, RGW_DATA: data, RGW_PORT: String(port) };
  t.teardown(() => {
    spawnSync("bash", [`${scripts}rgw-stop.sh`, "--wipe"], { env, encoding: "utf8" });
    rmSync(data, { recursive: true, force: true });
  });
  const started = spawnSync("bash", [`${scripts}rgw-start.sh`], { env, encoding: "utf8", timeout: 120_000 });
  if (started.status !== 0) throw new Error(`RGW did not start: ${started.stdout}\n${started.stderr}`);
  const value = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(started.stdout)?.[1] ?? "";
  return {
    endpoint: value("S3_ENDPOINT"),
    accessKeyId: value("S3_ACCESS_KEY"),
    secretAccessKey: value("S3_SECRET_KEY"),
  };
}
