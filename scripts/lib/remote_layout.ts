import type { CreateOptions, Disk, DiskFile, OpenOptions } from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { encodeBatch } from "../../src/log/batch/batch_codec.ts";
import { readSuperblock } from "../../src/log/partition/superblock.ts";
import { writeSeededPartition } from "../../src/log/partition/seeded_partition.ts";
import type { RemoteMarker } from "../../src/log/remote/remote_marker.ts";
import { segmentStem } from "../../src/log/segment/segment.ts";
import { SparseIndex } from "../../src/log/segment/sparse_index.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { type PartitionIncarnation, segmentKeys } from "../../src/tier/bucket/object_keys.ts";
import { indexMetadata, segmentMetadata } from "../../src/tier/upload/segment_uploader.ts";

/**
 * A tiered partition's remote chain written straight into a stopped server's data directory and its
 * `fs` bucket, as uploads and evictions would have left them, without producing a byte: each
 * segment a `.log` object of whole Kafka batches with its metadata, an `.index` object and its local
 * copy, and the partition's remote table; its directory then holds the chain, an empty active
 * segment at the end, and a superblock whose floor is there. For benchmarks of what a node costs
 * with a large bucket; written without fsyncs (a crash loses the layout, which is the benchmark's).
 */
export interface RemoteLayout {
  /** Segments in the chain. */
  segments: number;
  /** Bytes of each segment's `.log`, in batches of `batchBytes` (the last one may be smaller). */
  segmentBytes: number;
  batchBytes: number;
  /** Bytes of each record's value. */
  recordBytes: number;
  /** One index entry each this many bytes (the topic's `index_interval`). */
  indexIntervalBytes: number;
}

/** What a written chain holds. */
export interface WrittenChain {
  /** The offset after the last segment's: the floor and the active segment's start. */
  endOffset: number;
  bucketBytes: number;
}

/** Writes `layout` into the partition directory `dir` (its superblock read first) and the bucket. */
export async function writeRemoteChain(
  dir: string,
  objectsPath: string,
  incarnation: Omit<PartitionIncarnation, "createdRevision" | "purgeGeneration">,
  layout: RemoteLayout,
  startTimestampUs: number,
): Promise<WrittenChain> {
  const disk = new UnsyncedDisk();
  const superblock = await readSuperblock(disk, dir);
  if (superblock === null) throw new Error(`Cannot lay out a remote chain in ${dir}: it has no superblock`);
  const { createdRevision, purgeGeneration } = superblock;
  const store = new FsObjectStore(disk, objectsPath, new Rng(1));
  const markers: RemoteMarker[] = [];
  const indexes: { stem: string; bytes: Uint8Array }[] = [];
  let offset = 0;
  let bucketBytes = 0;
  for (let s = 0; s < layout.segments; s++) {
    const timestampUs = startTimestampUs + s * 1_000_000;
    const segment = segmentOf(offset, layout, timestampUs);
    const keys = segmentKeys({ ...incarnation, createdRevision, purgeGeneration }, offset, null);
    const logCrc32 = crc32(segment.log);
    const indexBytes = segment.index.bytes().slice();
    const marker: RemoteMarker = {
      startOffset: offset,
      endOffset: segment.endOffset,
      sizeBytes: segment.log.length,
      indexSizeBytes: indexBytes.length,
      startTimestampUs: timestampUs,
      endTimestampUs: timestampUs,
      maxTimestampUs: timestampUs,
      createdRevision,
      purgeGeneration,
      logCrc32,
      merged: false,
    };
    const sealed = { ...marker, logPath: "", indexPath: `${dir}/${segmentStem(offset)}.index` };
    await putObject(
      store,
      keys.log,
      segment.log,
      segmentMetadata(sealed, marker.sizeBytes, indexBytes.length, logCrc32),
    );
    await putObject(store, keys.index, indexBytes, indexMetadata(crc32(indexBytes)));
    markers.push(marker);
    indexes.push({ stem: segmentStem(offset), bytes: indexBytes });
    bucketBytes += segment.log.length + indexBytes.length;
    offset = segment.endOffset + 1;
  }
  await writeSeededPartition(disk, dir, {
    createdRevision,
    purgeGeneration,
    tieredUpToOffset: offset,
    markers,
    epochs: [],
  });
  // As eviction leaves them: each remote segment's `.index` stays beside the table.
  for (const { stem, bytes } of indexes) await Deno.writeFile(`${dir}/${stem}.index`, bytes);
  return { endOffset: offset, bucketBytes };
}

/** One segment's `.log` bytes from `startOffset`, and its sparse index. */
function segmentOf(startOffset: number, layout: RemoteLayout, timestampUs: number) {
  const value = new Uint8Array(layout.recordBytes).fill(0x61);
  const perBatch = Math.max(1, Math.floor(layout.batchBytes / (layout.recordBytes + 16)));
  const messages = Array.from({ length: perBatch }, () => ({ key: null, headers: {}, payload: value }));
  const batches: Uint8Array[] = [];
  const index = new SparseIndex();
  let size = 0;
  let offset = startOffset;
  let lastIndexed = -Infinity;
  while (size < layout.segmentBytes) {
    const batch = encodeBatch(offset, Math.floor(timestampUs / 1000), messages);
    if (size - lastIndexed >= layout.indexIntervalBytes) {
      index.add({ relativeOffset: offset - startOffset, position: size, timestampUs });
      lastIndexed = size;
    }
    batches.push(batch);
    size += batch.length;
    offset += perBatch;
  }
  const log = new Uint8Array(size);
  let at = 0;
  for (const batch of batches) {
    log.set(batch, at);
    at += batch.length;
  }
  return { log, index, endOffset: offset - 1 };
}

async function putObject(
  store: FsObjectStore,
  key: string,
  bytes: Uint8Array,
  metadata: Record<string, string>,
): Promise<void> {
  await store.put(key, () => oneChunk(bytes), {
    sizeBytes: bytes.length,
    crc32: crc32(bytes),
    metadata,
    ifAbsent: false,
  });
}

async function* oneChunk(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** A `NodeDisk` whose fsyncs do nothing: for layouts a benchmark writes and throws away. */
class UnsyncedDisk extends NodeDisk implements Disk {
  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return unsynced(await super.open(path, options));
  }

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return unsynced(await super.createExclusive(path, options));
  }

  override fsyncDir(_dirPath: string): Promise<void> {
    return Promise.resolve();
  }
}

function unsynced(file: DiskFile): DiskFile {
  file.sync = () => Promise.resolve();
  return file;
}
