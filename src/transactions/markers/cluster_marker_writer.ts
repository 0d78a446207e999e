import { isBug } from "../../runtime/assert.ts";
import { topicPartitionOfKey } from "../core/txn_state.ts";
import type { TxnMarkerRequest, TxnMarkerWriter } from "../txn_coordinator.ts";
import type { LocalMarkerWriter } from "./local_marker_writer.ts";
import { type MarkerFailure, MarkersNotWrittenError } from "./markers_not_written.ts";

/** Writes markers to partitions another node leads (Strata's node-to-node transaction markers). */
export interface RemoteMarkerWriter {
  /** Resolves with the partitions whose markers that node could not write. */
  write(request: TxnMarkerRequest): Promise<MarkerFailure[]>;
}

export interface ClusterMarkerWriterDeps {
  nodeId: number;
  /** The node that leads the topic's partition now; null when none does (or the topic is gone). */
  leaderOf(topic: string, partition: number): number | null;
  local: LocalMarkerWriter;
  /** The link to another node; null when it is not live. */
  remote(nodeId: number): RemoteMarkerWriter | null;
}

/**
 * A transaction's markers in a cluster: the partitions grouped by the node that leads each now,
 * those led here written through the data plane (`LocalMarkerWriter`), the others sent to their
 * leaders, every node at once. A partition with no leader, or whose leader could not be reached or
 * could not write it, is named by `MarkersNotWrittenError` and written again (to its leader then).
 */
export class ClusterMarkerWriter implements TxnMarkerWriter {
  readonly #deps: ClusterMarkerWriterDeps;

  constructor(deps: ClusterMarkerWriterDeps) {
    this.#deps = deps;
  }

  async write(request: TxnMarkerRequest): Promise<void> {
    const byLeader = new Map<number, string[]>();
    const failures: MarkerFailure[] = [];
    for (const key of request.partitions) {
      const { topic, partition } = topicPartitionOfKey(key);
      const leader = this.#deps.leaderOf(topic, partition);
      if (leader === null) {
        failures.push({ partition: key, error: new Error(`no node leads ${key} now`) });
        continue;
      }
      const keys = byLeader.get(leader);
      if (keys === undefined) byLeader.set(leader, [key]);
      else keys.push(key);
    }
    // Bounded by the cluster's nodes: one write per leader.
    const written = await Promise.all(
      [...byLeader].map(([leader, partitions]) => this.#writeTo(leader, { ...request, partitions })),
    );
    for (const failed of written) failures.push(...failed);
    if (failures.length > 0) throw new MarkersNotWrittenError(failures);
  }

  async #writeTo(leader: number, request: TxnMarkerRequest): Promise<MarkerFailure[]> {
    if (leader === this.#deps.nodeId) return await this.#deps.local.writeEach(request);
    const link = this.#deps.remote(leader);
    if (link === null) {
      const error = new Error(`node ${leader}, which leads them, is not live`);
      return request.partitions.map((partition) => ({ partition, error }));
    }
    try {
      return await link.write(request);
    } catch (error) {
      if (isBug(error)) throw error;
      return request.partitions.map((partition) => ({ partition, error }));
    }
  }
}
