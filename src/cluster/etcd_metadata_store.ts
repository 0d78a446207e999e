import type { Metadata } from "../broker/metadata/metadata.ts";
import { ConfigError } from "../config/config_error.ts";
import type { MetadataStore } from "../broker/metadata/metadata_store.ts";
import { withOptionDefaults } from "../broker/catalog/topic_options.ts";
import type { Coordinator, Watch } from "../coordinator/coordinator.ts";
import { CompactedError } from "../coordinator/coordinator_errors.ts";
import { assert, rethrowBug } from "../runtime/assert.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import { FormatVersionError, storageFormatVersion } from "../runtime/format_version_error.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Rng } from "../runtime/rng.ts";

/** Times a commit applies its change again after another writer's commit came first, at most. */
export const commitAttemptsMax = 32;

/** Pause before the store reads the document again after its watch ended. */
const reloadRetryMs = 200;

export interface EtcdMetadataStoreDeps {
  coordinator: Coordinator;
  /** The document's key (`ClusterKeys.metadata`). */
  key: string;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** `[system] cluster_id`: names a new cluster's document; empty: a random id. */
  configuredClusterId: string;
}

/**
 * The cluster's metadata document in one etcd key, shared by every node. A commit applies its
 * change to the latest document and writes it with a compare on the key's mod revision; when
 * another node committed first, it reads that document and applies the change again (at most
 * `commitAttemptsMax` times). A watch keeps `doc` current with the other nodes' commits and tells
 * `onRemoteChange` listeners.
 */
export class EtcdMetadataStore implements MetadataStore {
  readonly #deps: EtcdMetadataStoreDeps;
  #doc: Metadata | null = null;
  #modRevision = 0;
  #writing: Promise<void> = Promise.resolve();
  #watch: Watch | null = null;
  #closed = false;
  readonly #listeners: Array<(doc: Readonly<Metadata>) => void> = [];

  constructor(deps: EtcdMetadataStoreDeps) {
    this.#deps = deps;
  }

  async load(): Promise<Readonly<Metadata>> {
    assert(this.#doc === null, "Cannot load the metadata: it is loaded already");
    const { coordinator, key, rng, configuredClusterId } = this.#deps;
    const fresh: Metadata = {
      version: storageFormatVersion,
      clusterId: configuredClusterId !== "" ? configuredClusterId : rng.hex64(),
      nextStreamId: 1,
      streams: [],
    };
    // The first node of a new cluster writes the document; the others read it.
    const created = await coordinator.txn({
      compare: [{ key, target: "createRevision", result: "equal", value: 0 }],
      success: [{ kind: "put", key, value: JSON.stringify(fresh) }],
      failure: [{ kind: "range", key }],
    });
    if (created.succeeded) {
      this.#set(fresh, created.revision);
    } else {
      const read = created.responses[0];
      const kv = read?.kind === "range" ? read.kvs[0] : undefined;
      assert(kv !== undefined, `Cannot load the metadata: ${key} is neither absent nor present`);
      const stored = this.#parse(kv.value);
      if (configuredClusterId !== "" && stored.clusterId !== configuredClusterId) {
        throw new ConfigError(
          "[system] cluster_id",
          `is ${configuredClusterId}, but the cluster under ${key} is ${stored.clusterId}: every node needs the same id`,
        );
      }
      this.#set(stored, kv.modRevision);
    }
    this.#startWatch(this.#modRevision + 1);
    return this.doc;
  }

  get doc(): Readonly<Metadata> {
    assert(this.#doc !== null, "Cannot read the metadata: it is not loaded");
    return this.#doc;
  }

  onRemoteChange(listener: (doc: Readonly<Metadata>) => void): void {
    this.#listeners.push(listener);
  }

  commit<T>(change: (doc: Metadata) => T): Promise<T> {
    const committed = this.#writing.then(() => this.#commitNow(change));
    // The chain goes on after a failed commit; its caller hears of the failure.
    this.#writing = committed.then(() => {}, () => {});
    return committed;
  }

  close(): void {
    this.#closed = true;
    this.#watch?.close();
  }

  async #commitNow<T>(change: (doc: Metadata) => T): Promise<T> {
    const { coordinator, key } = this.#deps;
    for (let attempt = 1; attempt <= commitAttemptsMax; attempt++) {
      const next = structuredClone(this.doc) as Metadata;
      const result = change(next);
      const written = await coordinator.txn({
        compare: [{ key, target: "modRevision", result: "equal", value: this.#modRevision }],
        success: [{ kind: "put", key, value: JSON.stringify(next) }],
        failure: [{ kind: "range", key }],
      });
      if (written.succeeded) {
        this.#set(next, written.revision);
        return result;
      }
      // Another node committed first: its document is the one to change.
      const read = written.responses[0];
      const kv = read?.kind === "range" ? read.kvs[0] : undefined;
      assert(kv !== undefined, `Cannot commit the metadata: ${key} was deleted`);
      this.#adopt(kv.value, kv.modRevision);
    }
    throw new Error(`Cannot commit the metadata: ${commitAttemptsMax} other commits came first in a row`);
  }

  #parse(value: string): Metadata {
    const doc = JSON.parse(value) as Metadata;
    if (doc.version !== storageFormatVersion) {
      throw new FormatVersionError(
        `the cluster's metadata at ${this.#deps.key}`,
        doc.version,
        storageFormatVersion,
      );
    }
    for (const stream of doc.streams) {
      for (const topic of stream.topics) topic.options = withOptionDefaults(topic.options);
    }
    return doc;
  }

  #set(doc: Metadata, modRevision: number): void {
    this.#doc = doc;
    this.#modRevision = modRevision;
  }

  /** Takes a newer document written by another node, and tells the listeners. */
  #adopt(value: string, modRevision: number): void {
    if (modRevision <= this.#modRevision) return;
    this.#set(this.#parse(value), modRevision);
    for (const listener of this.#listeners) listener(this.doc);
  }

  #startWatch(fromRevision: number): void {
    if (this.#closed) return;
    this.#watch = this.#deps.coordinator.watch({ key: this.#deps.key }, fromRevision, {
      events: (events) => {
        for (const event of events) {
          if (event.kind === "put") this.#adopt(event.kv.value, event.kv.modRevision);
        }
      },
      ended: (error) => this.#watchEnded(error),
    });
  }

  #watchEnded(error: Error | null): void {
    this.#watch = null;
    if (this.#closed) return;
    if (!(error instanceof CompactedError)) {
      this.#deps.logger.warn("the metadata watch ended; reading the document again", {
        error,
      });
    }
    const reload = () => {
      if (this.#closed) return;
      this.#deps.coordinator.range({ key: this.#deps.key }).then(({ kvs, revision }) => {
        const kv = kvs[0];
        if (kv !== undefined) this.#adopt(kv.value, kv.modRevision);
        this.#startWatch(revision + 1);
      }, (error) => {
        rethrowBug(error, this.#deps.logger, "reading the metadata document threw; the process stops");
        this.#deps.logger.warn("Cannot read the metadata document; trying again", { error });
        this.#deps.clock.schedule(reloadRetryMs, reload);
      });
    };
    reload();
  }
}
