import { rethrowBug } from "../../runtime/assert.ts";
import type { Coordinator, KeyValue, Watch, WatchEvent } from "../../coordinator/coordinator.ts";
import { CompactedError } from "../../coordinator/coordinator_errors.ts";
import type { PartitionAddress } from "../../log/partition/partition.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ClusterKeys } from "./cluster_keys.ts";
import type { StoredPartition, TopicPlacement } from "../controller/controller_core.ts";
import { firstLeaderEpochOf, type Metadata } from "../../broker/metadata/metadata.ts";
import type { NodeRecord } from "./node_session.ts";
import { decodePartitionState } from "../controller/partition_state.ts";

/** What the view tells its listeners, after it has applied the change to itself. */
export type ClusterChange =
  | { kind: "nodes"; live: readonly number[] }
  | { kind: "partition"; key: string; address: PartitionAddress; stored: StoredPartition | null }
  | { kind: "controller"; nodeId: number | null; epoch: number }
  | { kind: "topics"; topics: readonly TopicPlacement[] };

/** Pause before the view reads everything again after its watch ended. */
const reloadRetryMs = 200;

/**
 * This node's picture of the cluster, kept by one watch of the cluster's prefix: the live nodes
 * and their addresses, every partition's state, and the controller. It loads with one read and
 * watches from the revision after it, so it misses nothing; when the watch ends (history
 * compacted, etcd gone too long) it reads everything again and tells listeners what changed.
 */
export class ClusterView {
  readonly #coordinator: Coordinator;
  readonly #keys: ClusterKeys;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #nodes = new Map<number, NodeRecord>();
  readonly #registered = new Map<number, number>();
  readonly #partitions = new Map<string, StoredPartition>();
  #controller: { nodeId: number; epoch: number } | null = null;
  #topics: TopicPlacement[] | null = null;
  #watch: Watch | null = null;
  #closed = false;
  readonly #listeners: Array<(change: ClusterChange) => void> = [];

  constructor(coordinator: Coordinator, keys: ClusterKeys, clock: Clock, logger: Logger) {
    this.#coordinator = coordinator;
    this.#keys = keys;
    this.#clock = clock;
    this.#logger = logger;
  }

  async open(): Promise<void> {
    await this.#load();
  }

  liveNodes(): number[] {
    return [...this.#nodes.keys()].sort((a, b) => a - b);
  }

  /**
   * The revisions at which the live nodes registered (their keys' create revisions): a node whose
   * registration is newer than a partition state it leads in is a later process than the one that
   * state was written for.
   */
  registeredRevisions(): ReadonlyMap<number, number> {
    return this.#registered;
  }

  node(id: number): NodeRecord | null {
    return this.#nodes.get(id) ?? null;
  }

  partition(address: PartitionAddress): StoredPartition | null {
    return this.#partitions.get(this.#keys.partition(address)) ?? null;
  }

  partitions(): ReadonlyMap<string, StoredPartition> {
    return this.#partitions;
  }

  controller(): { nodeId: number; epoch: number } | null {
    return this.#controller;
  }

  /** The topics the metadata names, as the controller places them; null before the metadata exists. */
  topics(): readonly TopicPlacement[] | null {
    return this.#topics;
  }

  onChange(listener: (change: ClusterChange) => void): void {
    this.#listeners.push(listener);
  }

  close(): void {
    this.#closed = true;
    this.#watch?.close();
  }

  async #load(): Promise<void> {
    const { kvs, revision } = await this.#coordinator.range({ key: `${this.#keys.prefix}/`, prefix: true });
    // Nodes first, then the rest: partitions are told against the live nodes of the same read.
    const nodesBefore = this.liveNodes().join();
    this.#nodes.clear();
    const isNode = (key: string) => this.#keys.nodeIdOf(key) !== null;
    for (const kv of kvs.filter((kv) => isNode(kv.key))) this.#apply({ kind: "put", kv });
    if (this.liveNodes().join() !== nodesBefore) this.#emit({ kind: "nodes", live: this.liveNodes() });
    const seen = new Set(kvs.map((kv) => kv.key));
    if (!seen.has(this.#keys.controller)) this.#setController(null, 0);
    for (const kv of kvs.filter((kv) => !isNode(kv.key))) this.#apply({ kind: "put", kv });
    for (const key of [...this.#partitions.keys()]) {
      if (!seen.has(key)) this.#apply({ kind: "delete", kv: { ...emptyKv, key } });
    }
    this.#watch = this.#coordinator.watch({ key: `${this.#keys.prefix}/`, prefix: true }, revision + 1, {
      events: (events) => this.#events(events),
      ended: (error) => this.#ended(error),
    });
  }

  /** Applies and tells each change in revision order: a listener never decides on an older view. */
  #events(events: readonly WatchEvent[]): void {
    for (const event of events) {
      if (this.#apply(event)) this.#emit({ kind: "nodes", live: this.liveNodes() });
    }
  }

  /** Applies one change; true when it changed the live nodes (the caller tells listeners). */
  #apply(event: WatchEvent): boolean {
    const { key } = event.kv;
    const nodeId = this.#keys.nodeIdOf(key);
    if (nodeId !== null) return this.#applyNode(nodeId, event);
    if (key === this.#keys.controller) {
      if (event.kind === "delete") this.#setController(null, 0);
      else this.#setController(Number(event.kv.value), event.kv.createRevision);
      return false;
    }
    if (key === this.#keys.metadata) {
      if (event.kind === "put") this.#setTopics(event.kv.value);
      return false;
    }
    const address = this.#keys.addressOf(key);
    if (address === null) return false;
    const stored = event.kind === "delete" ? null : this.#storedOf(event.kv);
    if (event.kind !== "delete" && stored === null) return false;
    if (stored === null && !this.#partitions.delete(key)) return false;
    if (stored !== null) this.#partitions.set(key, stored);
    this.#emit({ kind: "partition", key, address, stored });
    return false;
  }

  #applyNode(nodeId: number, event: WatchEvent): boolean {
    if (event.kind === "delete") {
      this.#registered.delete(nodeId);
      return this.#nodes.delete(nodeId);
    }
    try {
      const record = JSON.parse(event.kv.value) as NodeRecord;
      const had = this.#nodes.has(nodeId);
      this.#registered.set(nodeId, event.kv.createRevision);
      this.#nodes.set(nodeId, { nodeId, kafka: String(record.kafka), http: String(record.http) });
      return !had;
    } catch (error) {
      this.#logger.error("Cannot read a node's record", { key: event.kv.key, error });
      return false;
    }
  }

  #storedOf(kv: KeyValue): StoredPartition | null {
    try {
      return { state: decodePartitionState(kv.key, kv.value), modRevision: kv.modRevision };
    } catch (error) {
      this.#logger.error("Cannot read a partition's state", { key: kv.key, error });
      return null;
    }
  }

  #setTopics(value: string): void {
    try {
      const doc = JSON.parse(value) as Metadata;
      this.#topics = doc.streams.flatMap((stream) =>
        stream.topics.map((topic) => ({
          keyPrefix: this.#keys.topicPartitions(stream.id, topic.id),
          topicId: topic.id,
          partitions: topic.options.partitions,
          replicationFactor: topic.options.replicationFactor ?? null,
          firstLeaderEpoch: firstLeaderEpochOf(topic),
        }))
      );
    } catch (error) {
      this.#logger.error("Cannot read the cluster's metadata", { error });
      return;
    }
    this.#emit({ kind: "topics", topics: this.#topics });
  }

  #setController(nodeId: number | null, epoch: number): void {
    const before = this.#controller;
    this.#controller = nodeId === null ? null : { nodeId, epoch };
    if (before?.nodeId === nodeId && (before?.epoch ?? 0) === epoch) return;
    this.#emit({ kind: "controller", nodeId, epoch });
  }

  #ended(error: Error | null): void {
    this.#watch = null;
    if (this.#closed) return;
    if (error !== null && !(error instanceof CompactedError)) {
      this.#logger.warn("the cluster watch ended; reading the cluster again", { error });
    }
    const reload = () => {
      if (this.#closed) return;
      this.#load().catch((failure) => {
        rethrowBug(failure, this.#logger, "reading the cluster threw; the process stops");
        this.#logger.warn("Cannot read the cluster; trying again", { error: failure });
        this.#clock.schedule(reloadRetryMs, reload);
      });
    };
    reload();
  }

  #emit(change: ClusterChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}

const emptyKv: KeyValue = { key: "", value: "", createRevision: 0, modRevision: 0, version: 0, lease: "0" };
