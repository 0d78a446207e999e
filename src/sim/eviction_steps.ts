import { remoteTableName } from "../log/remote/remote_table.ts";

/**
 * Which durable step of an eviction a disk operation is, if any: the remote table's open, the
 * append of the markers and its sync, the directory fsync that makes a new table durable, the
 * `.log`s' unlinks and the fsync that makes them durable. Retention's forget records go through
 * the same table, and count as its steps too.
 */
export function evictionStep(name: string, path: string, previous: string | null): string | null {
  if (path.endsWith(`/${remoteTableName}`)) {
    if (name === "open") return "marker open";
    if (name === "write") return "marker write";
    if (name === "sync") return "marker sync";
    return null;
  }
  const afterMarker = previous === "marker sync" || previous === "marker directory sync";
  if (name === "unlink" && path.endsWith(".log") && (afterMarker || previous === "log unlink")) {
    return "log unlink";
  }
  if (name === "sync directory" && previous === "marker sync") return "marker directory sync";
  if (name === "sync directory" && previous === "log unlink") return "unlink directory sync";
  return null;
}
