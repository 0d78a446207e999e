import { ensureBucket } from "./ensure_bucket.ts";
import { type LocalBucket, runCommand } from "./local_cluster.ts";

/**
 * A throw-away Ceph RGW for scripts (scripts/rgw-start.sh: one monitor, one OSD, one radosgw on
 * 127.0.0.1), with a bucket. Only one runs at a time: the monitor's ports are fixed.
 */

export interface LocalRgw {
  bucket: LocalBucket;
  /** Stops the daemons and wipes the data directory. */
  stop(): Promise<void>;
}

/** Whether radosgw, ceph-mon and ceph-osd are installed. */
export async function rgwInstalled(): Promise<boolean> {
  const found = await runCommand("sh", [
    "-c",
    "command -v radosgw && command -v ceph-mon && command -v ceph-osd",
  ]);
  return found.code === 0;
}

export async function startLocalRgw(dir: string, bucket: string, port: number): Promise<LocalRgw> {
  const scripts = new URL("..", import.meta.url).pathname;
  const env = { RGW_DATA: `${dir}/rgw`, RGW_PORT: String(port) };
  const run = (script: string, args: string[] = []) =>
    new Deno.Command("bash", {
      args: [`${scripts}${script}`, ...args],
      env,
      stdout: "piped",
      stderr: "piped",
    })
      .output();
  const stop = async () => {
    await run("rgw-stop.sh", ["--wipe"]);
  };
  const started = await run("rgw-start.sh");
  const out = new TextDecoder().decode(started.stdout);
  if (started.code !== 0) {
    await stop();
    throw new Error(`Cannot start RGW: ${out}\n${new TextDecoder().decode(started.stderr)}`);
  }
  const value = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(out)?.[1] ?? "";
  const local: LocalBucket = {
    endpoint: value("S3_ENDPOINT"),
    bucket,
    accessKeyId: value("S3_ACCESS_KEY"),
    secretAccessKey: value("S3_SECRET_KEY"),
  };
  try {
    await ensureBucket({ ...local, region: "us-east-1" });
  } catch (error) {
    await stop();
    throw error;
  }
  return { bucket: local, stop };
}
