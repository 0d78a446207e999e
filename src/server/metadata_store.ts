import { readRecordFile, writeRecordFile } from "../log/record_file.ts";
import type { Disk } from "../runtime/disk.ts";
import type { Rng } from "../runtime/rng.ts";
import { type TopicOptions, withOptionDefaults } from "./topic_options.ts";

export interface TopicMeta {
  id: number;
  name: string;
  createdAtMs: number;
  options: TopicOptions;
}

export interface StreamMeta {
  id: number;
  name: string;
  createdAtMs: number;
  nextTopicId: number;
  topics: TopicMeta[];
}

export interface Metadata {
  version: 1;
  clusterId: string;
  nextStreamId: number;
  streams: StreamMeta[];
}

const magic = "STRAMETA";
const fileName = "metadata.bin";

/** Reads the metadata without opening a store, for tools that run beside the server (GC); null if absent. */
export function readMetadata(disk: Disk, dataPath: string): Promise<Metadata | null> {
  return readRecordFile<Metadata>(disk, `${dataPath}/${fileName}`, magic);
}

/**
 * The names-to-ids map and topic options, in one atomically rewritten file under the data
 * directory. Directories are named by id only. Changes are serialized; each resolves once durable.
 */
export class MetadataStore {
  readonly #disk: Disk;
  readonly #dataPath: string;
  #doc: Metadata;
  #writing: Promise<void> = Promise.resolve();

  private constructor(disk: Disk, dataPath: string, doc: Metadata) {
    this.#disk = disk;
    this.#dataPath = dataPath;
    this.#doc = doc;
  }

  /** Loads the metadata, creating it (with a cluster id) on first boot. */
  static async open(
    disk: Disk,
    dataPath: string,
    rng: Rng,
    configuredClusterId: string,
  ): Promise<MetadataStore> {
    const stored = await readMetadata(disk, dataPath);
    const doc: Metadata = stored ?? { version: 1, clusterId: rng.hex64(), nextStreamId: 1, streams: [] };
    if (configuredClusterId !== "") doc.clusterId = configuredClusterId;
    for (const stream of doc.streams) {
      for (const topic of stream.topics) topic.options = withOptionDefaults(topic.options);
    }
    const store = new MetadataStore(disk, dataPath, doc);
    if (stored === null || stored.clusterId !== doc.clusterId) await store.commit(() => {});
    return store;
  }

  get doc(): Readonly<Metadata> {
    return this.#doc;
  }

  /** Applies `change` to a copy, writes it durably, then makes it current. */
  commit(change: (doc: Metadata) => void): Promise<void> {
    // The change is applied inside the chain, to the latest document, so no commit is lost.
    this.#writing = this.#writing.catch(() => {}).then(async () => {
      const next = structuredClone(this.#doc);
      change(next);
      await writeRecordFile(this.#disk, this.#dataPath, fileName, magic, next);
      this.#doc = next;
    });
    return this.#writing;
  }
}
