import { join } from "node:path";
import type { Test } from "tap";
import { type ClientEncoding, StrataClient } from "../../src/client/strata_client.ts";
import { loadConfig } from "../../src/config/load_config.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import type { Disk } from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { StrataServer } from "../../src/server/server.ts";
import { tempDir } from "./temp_dir.ts";

/**
 * Opens a real server (real disk, virtual clock) in this process; requests go straight to its
 * fetch handler. `env` sets config keys as STRATA_* variables would; `disk` is a fresh NodeDisk by default.
 */
export async function openServer(
  t: Test,
  env: Record<string, string> = {},
  dir = tempDir(t),
  disk: Disk = new NodeDisk(),
) {
  const clock = new VirtualClock();
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: join(dir, "data"), ...env });
  const server = await StrataServer.open({
    config,
    logger: silentLogger(),
    clock,
    disk,
    rng: new Rng(7),
  });
  let closed = false;
  const close = async () => {
    if (!closed) await server.close();
    closed = true;
  };
  t.teardown(close);
  const client = (encoding: ClientEncoding = "json", token?: string) =>
    new StrataClient({
      baseUrl: "http://strata.test",
      encoding,
      fetch: server.handler,
      ...(token ? { token } : {}),
    });
  const raw = (path: string, init?: RequestInit) =>
    server.handler(new Request(`http://strata.test${path}`, init));
  return { server, clock, dir, client, raw, close };
}
