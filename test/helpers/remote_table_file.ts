import { existsSync, readFileSync } from "node:fs";
import type { RemoteMarker } from "../../src/log/remote/remote_marker.ts";
import { remoteTableName, RemoteTableReplay } from "../../src/log/remote/remote_table.ts";

/**
 * The live markers of the remote table in a partition directory, oldest first (none without a
 * table), read whole and at once: for tests and tools that look at a stopped or quiet server's files.
 */
export function tableMarkersIn(partitionDir: string): RemoteMarker[] {
  const path = `${partitionDir}/${remoteTableName}`;
  if (!existsSync(path)) return [];
  const replay = new RemoteTableReplay(readFileSync(path));
  while (!replay.done) replay.step(8192);
  return replay.markers();
}
