/**
 * Which durable step of an eviction a disk operation is, if any: the marker's creation, write and sync,
 * the directory fsync that makes it durable, the `.log`'s unlink and the fsync that makes that durable.
 */
export function evictionStep(name: string, path: string, previous: string | null): string | null {
  if (path.endsWith(".remote")) {
    if (name === "open") return "marker create";
    if (name === "write") return "marker write";
    if (name === "sync") return "marker sync";
    return null;
  }
  if (name === "unlink" && path.endsWith(".log") && previous === "marker directory sync") return "log unlink";
  if (name === "sync directory" && previous === "marker sync") return "marker directory sync";
  if (name === "sync directory" && previous === "log unlink") return "unlink directory sync";
  return null;
}
