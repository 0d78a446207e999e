import type { Disk } from "../../runtime/disk/disk.ts";
import type { Logger } from "../../runtime/logger.ts";
import { FormatVersionError } from "../../runtime/format_version_error.ts";
import { unlinkIfPresent } from "../../runtime/disk/file_ops.ts";
import { PartitionRefusedError } from "../log_errors.ts";
import { decodeRemoteMarker, type RemoteMarker, remoteMarkerBytes } from "./remote_marker.ts";
import { readRemoteTable, RemoteTable, remoteTableRecordBytes, RemoteTableReplay } from "./remote_table.ts";

/** A partition's remote table as boot opened it. */
export interface OpenedRemoteTable {
  table: RemoteTable;
  /** The table's live markers, oldest first, decoded as they are asked for. */
  live: RemoteTableReplay;
  /** Records cut from a torn tail. */
  tornRecords: number;
}

/**
 * Opens a partition's remote table at boot: a torn tail is cut, and `{stem}.remote` marker files of
 * the layout before the table (`names`: the directory's entries) are folded into it and removed.
 * A table of another format version or that contradicts itself refuses the partition.
 */
export async function openRemoteTable(
  disk: Disk,
  dir: string,
  names: readonly string[],
  label: string,
  logger: Logger,
): Promise<OpenedRemoteTable> {
  const read = async () => {
    try {
      return await readRemoteTable(disk, dir);
    } catch (error) {
      throw new PartitionRefusedError(label, (error as Error).message, { cause: error });
    }
  };
  let contents = await read() ?? new RemoteTableReplay(new Uint8Array(0));
  const tornBytes = contents.tornBytes;
  if (tornBytes > 0) {
    logger.warn("cutting the remote table's torn tail", { partition: label, bytes: tornBytes });
    await new RemoteTable(disk, dir, contents.records, contents.length).cutTornTail(tornBytes);
  }
  const files = names.filter((n) => /^\d{20}\.remote$/.test(n));
  const folded = files.length === 0 ? [] : await foldMarkerFiles(disk, dir, names, label, logger);
  if (folded.length > 0) {
    // Appended before the files go: a crash between leaves both, and folding again replaces each
    // marker by itself.
    await new RemoteTable(disk, dir, contents.records, contents.length).append(folded);
    contents = (await read())!;
  }
  for (const name of files) await unlinkIfPresent(disk, `${dir}/${name}`);
  if (files.length > 0) await disk.fsyncDir(dir);
  const table = new RemoteTable(disk, dir, contents.records, contents.length);
  return {
    table,
    live: contents,
    tornRecords: Math.ceil(tornBytes / remoteTableRecordBytes),
  };
}

/**
 * The readable `{stem}.remote` files of the older layout, oldest first. An unreadable one beside its
 * `.log` is an eviction a crash cut short and is removed; without its `.log` it refuses the partition.
 */
async function foldMarkerFiles(
  disk: Disk,
  dir: string,
  names: readonly string[],
  label: string,
  logger: Logger,
): Promise<RemoteMarker[]> {
  const logs = new Set(names.filter((n) => n.endsWith(".log")).map((n) => n.slice(0, 20)));
  const markers: RemoteMarker[] = [];
  for (const name of names.filter((n) => /^\d{20}\.remote$/.test(n))) {
    const stem = name.slice(0, 20);
    const bytes = await disk.readSmallFile(`${dir}/${name}`, remoteMarkerBytes + 1);
    let marker: RemoteMarker | null = null;
    try {
      marker = decodeRemoteMarker(bytes ?? new Uint8Array(0));
    } catch (error) {
      if (error instanceof FormatVersionError || !logs.has(stem)) {
        throw new PartitionRefusedError(label, `segment ${stem}: ${(error as Error).message}`, {
          cause: error,
        });
      }
      logger.warn("removing an unfinished eviction's marker", { partition: label, segment: stem });
      continue;
    }
    if (marker.startOffset !== Number(stem)) {
      throw new PartitionRefusedError(label, `marker ${name} names segment ${marker.startOffset}`);
    }
    markers.push(marker);
  }
  return markers;
}
