import { assert } from "../../runtime/assert.ts";
import type { Disk } from "../../runtime/disk/disk.ts";
import { readRecordFile, writeRecordFile } from "../../runtime/disk/record_file.ts";
import type { Rng } from "../../runtime/rng.ts";
import { FormatVersionError, storageFormatVersion } from "../../runtime/format_version_error.ts";
import type { Metadata } from "./metadata.ts";
import type { MetadataStore } from "./metadata_store.ts";
import { withOptionDefaults } from "../catalog/topic_options.ts";

const magic = "STRAMETA";
const fileName = "metadata.bin";

/** Reads the metadata without opening a store, for tools that run beside the server (GC); null if absent. */
export function readMetadata(disk: Disk, dataPath: string): Promise<Metadata | null> {
  return readRecordFile<Metadata>(disk, `${dataPath}/${fileName}`, magic);
}

/**
 * The metadata in one atomically rewritten file under the data directory. Directories are named
 * by id only. Changes are serialized; each resolves once durable.
 */
export class LocalMetadataStore implements MetadataStore {
  readonly #disk: Disk;
  readonly #dataPath: string;
  readonly #rng: Rng;
  readonly #configuredClusterId: string;
  #doc: Metadata | null = null;
  #writing: Promise<void> = Promise.resolve();

  /** `configuredClusterId` (`[system] cluster_id`) replaces the stored one unless empty. */
  constructor(disk: Disk, dataPath: string, rng: Rng, configuredClusterId: string) {
    this.#disk = disk;
    this.#dataPath = dataPath;
    this.#rng = rng;
    this.#configuredClusterId = configuredClusterId;
  }

  async load(): Promise<Readonly<Metadata>> {
    assert(this.#doc === null, "Cannot load the metadata: it is loaded already");
    const stored = await readMetadata(this.#disk, this.#dataPath);
    if (stored !== null && stored.version !== storageFormatVersion) {
      throw new FormatVersionError(
        `the data directory ${this.#dataPath}`,
        stored.version,
        storageFormatVersion,
      );
    }
    const doc: Metadata = stored ??
      { version: storageFormatVersion, clusterId: this.#rng.hex64(), nextStreamId: 1, streams: [] };
    // A configured id replaces the stored one in memory; the file takes it with the next commit.
    if (this.#configuredClusterId !== "") doc.clusterId = this.#configuredClusterId;
    for (const stream of doc.streams) {
      for (const topic of stream.topics) topic.options = withOptionDefaults(topic.options);
    }
    this.#doc = doc;
    if (stored === null) await this.commit(() => {});
    return this.doc;
  }

  get doc(): Readonly<Metadata> {
    assert(this.#doc !== null, "Cannot read the metadata: it is not loaded");
    return this.#doc;
  }

  /** One store per data directory: no other writer, so no remote change to hear. */
  onRemoteChange(_listener: (doc: Readonly<Metadata>) => void): void {}

  commit<T>(change: (doc: Metadata) => T): Promise<T> {
    // The change is applied inside the chain, to the latest document, so no commit is lost; one
    // store per data directory means no other writer, so each change runs once.
    const committed = this.#writing.then(async () => {
      const next = structuredClone(this.doc) as Metadata;
      const result = change(next);
      await writeRecordFile(this.#disk, this.#dataPath, fileName, magic, next);
      this.#doc = next;
      return result;
    });
    // The chain goes on after a failed commit; its caller hears of the failure.
    this.#writing = committed.then(() => {}, () => {});
    return committed;
  }
}
