import { type Disk, DiskError } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { Metadata } from "../metadata/metadata.ts";

/**
 * Removes the stream and topic directories under `streamsDir` that the metadata no longer
 * names: what an interrupted delete left (the metadata commits first, the directories go after).
 */
export async function sweepOrphanDirectories(
  disk: Disk,
  streamsDir: string,
  doc: Readonly<Metadata>,
  logger: Logger,
): Promise<void> {
  const root = streamsDir;
  const streams = new Map(doc.streams.map((s) => [String(s.id), s]));
  for (const streamDir of await disk.list(root)) {
    const stream = streams.get(streamDir);
    if (stream === undefined) {
      logger.warn("removing orphan stream directory", { dir: `${root}/${streamDir}` });
      await disk.removeTree(`${root}/${streamDir}`);
      continue;
    }
    const topicsRoot = `${root}/${streamDir}/topics`;
    if ((await disk.stat(topicsRoot)) === null) continue;
    const topicIds = new Set(stream.topics.map((t) => String(t.id)));
    for (const topicDir of await disk.list(topicsRoot)) {
      if (topicIds.has(topicDir)) continue;
      logger.warn("removing orphan topic directory", { dir: `${topicsRoot}/${topicDir}` });
      await disk.removeTree(`${topicsRoot}/${topicDir}`);
    }
  }
}

/** The stream ids that have a directory under `streamsDir` (none before the first stream's). */
export async function streamIdsOnDisk(disk: Disk, streamsDir: string): Promise<number[]> {
  const names = await disk.list(streamsDir).catch((error) => {
    // No streams directory yet: no stream. Any other failure is the disk's, and stops the boot.
    if (error instanceof DiskError && error.code === "not_found") return [] as string[];
    throw error;
  });
  return names.map(Number).filter((id) => Number.isInteger(id) && id > 0);
}
