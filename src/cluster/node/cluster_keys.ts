import { labelOf, type PartitionAddress } from "../../log/partition/partition.ts";
import { assert } from "../../runtime/assert.ts";

/**
 * Where the cluster keeps its state in etcd, every key under `[cluster] etcd_prefix`:
 * - `{prefix}/nodes/{id}`: a live node's addresses, bound to its lease;
 * - `{prefix}/controller`: the controller's node id, bound to its lease; the key's create revision
 *   is the controller's epoch;
 * - `{prefix}/metadata`: the metadata document (streams, topics, options);
 * - `{prefix}/partitions/{stream}/{topic}/{partition}`: a partition's leader, epoch, in-sync set and
 *   replicas;
 * - `{prefix}/floors/{stream}/{topic}/{partition}`: a tiered partition's committed floor, written
 *   by its leader under a compare on the partition's state;
 * - `{prefix}/replaces/{stream}/{topic}/{partition}/{start:020}`: a committed replace of the
 *   partition's remote segments (a merge) from offset `start`, written the same way;
 * - `{prefix}/replace_acks/{stream}/{topic}/{partition}/{start:020}/{node}`: that node's chain took
 *   the replace (or no longer holds its range).
 */
export class ClusterKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    assert(prefix !== "" && !prefix.endsWith("/"), `Cannot use etcd prefix ${JSON.stringify(prefix)}`);
    this.prefix = prefix;
  }

  get nodes(): string {
    return `${this.prefix}/nodes/`;
  }

  node(id: number): string {
    return `${this.nodes}${id}`;
  }

  /** The node id a key under `nodes` names, or null for another key. */
  nodeIdOf(key: string): number | null {
    if (!key.startsWith(this.nodes)) return null;
    const id = Number(key.slice(this.nodes.length));
    return Number.isInteger(id) && id > 0 ? id : null;
  }

  get controller(): string {
    return `${this.prefix}/controller`;
  }

  get metadata(): string {
    return `${this.prefix}/metadata`;
  }

  get partitions(): string {
    return `${this.prefix}/partitions/`;
  }

  partition(address: PartitionAddress): string {
    return `${this.partitions}${labelOf(address)}`;
  }

  get floors(): string {
    return `${this.prefix}/floors/`;
  }

  /** The key of the committed floor of the partition labelled `label` ("{stream}/{topic}/{partition}"). */
  floor(label: string): string {
    return `${this.floors}${label}`;
  }

  get replaces(): string {
    return `${this.prefix}/replaces/`;
  }

  /** The key of the committed replace of `label`'s remote segments from `startOffset` on. */
  replace(label: string, startOffset: number): string {
    return `${this.replaces}${label}/${String(startOffset).padStart(20, "0")}`;
  }

  /** The partition label and start offset a key under `replaces` names, or null for another key. */
  replaceOf(key: string): { label: string; startOffset: number } | null {
    if (!key.startsWith(this.replaces)) return null;
    const parts = key.slice(this.replaces.length).split("/");
    if (parts.length !== 4 || !parts.every((p) => /^[0-9]+$/.test(p))) return null;
    return { label: parts.slice(0, 3).map(Number).join("/"), startOffset: Number(parts[3]) };
  }

  get replaceAcks(): string {
    return `${this.prefix}/replace_acks/`;
  }

  /** The prefix of the acks of the replace of `label`'s remote segments from `startOffset` on. */
  replaceAcksOf(label: string, startOffset: number): string {
    return `${this.replaceAcks}${label}/${String(startOffset).padStart(20, "0")}/`;
  }

  /** Every partition key of one topic. */
  topicPartitions(streamId: number, topicId: number): string {
    return `${this.partitions}${streamId}/${topicId}/`;
  }

  /** The partition a key under `partitions` names, or null for another key. */
  addressOf(key: string): PartitionAddress | null {
    if (!key.startsWith(this.partitions)) return null;
    const parts = key.slice(this.partitions.length).split("/").map(Number);
    if (parts.length !== 3 || !parts.every((n) => Number.isInteger(n) && n >= 0)) return null;
    return { streamId: parts[0]!, topicId: parts[1]!, partitionId: parts[2]! };
  }
}
