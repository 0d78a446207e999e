import { rethrowBug } from "../runtime/assert.ts";
import type { Coordinator } from "../coordinator/coordinator.ts";
import type { Logger } from "../runtime/logger.ts";
import type { ClusterKeys } from "./node/cluster_keys.ts";
import { decodePartitionState } from "./controller/partition_state.ts";
import { readCommittedReplaces } from "./replicated_control_log.ts";

/** Acks being written at most at once per node; past it, one is dropped (a later replay writes it). */
export const replaceAcksInFlightMax = 64;

export interface ReplaceAcksDeps {
  coordinator: Coordinator;
  keys: ClusterKeys;
  logger: Logger;
  nodeId: number;
}

/**
 * Which replicas took a committed replace of remote segments (a merge), kept in etcd beside it
 * (`{prefix}/replace_acks/{label}/{start:020}/{node}`): the objects the merge replaced are deleted
 * only once every replica of the partition took it, so that no replica's chain names a deleted
 * object (docs/DESIGN.md, "The adjacent-segment merger"). Once they are gone, the replace and its
 * acks are removed; so is a replace that retention passed.
 */
export class ReplaceAcks {
  readonly #deps: ReplaceAcksDeps;
  #inFlight = 0;

  constructor(deps: ReplaceAcksDeps) {
    this.#deps = deps;
  }

  /**
   * Records, in the background, that this node's chain took the replace of `label` from
   * `startOffset`, or no longer holds its range. A failure is logged: the replaced objects then stay
   * until a replay of the replace (at the next start) writes the ack again, or retention passes them.
   */
  ack(label: string, startOffset: number): void {
    const { coordinator, keys, logger, nodeId } = this.#deps;
    if (this.#inFlight >= replaceAcksInFlightMax) {
      logger.warn("too many replace acks in flight: one is left to a later replay", { partition: label });
      return;
    }
    this.#inFlight++;
    const key = `${keys.replaceAcksOf(label, startOffset)}${nodeId}`;
    coordinator.txn({ compare: [], success: [{ kind: "put", key, value: "1" }] }).catch((error) => {
      rethrowBug(error, logger, "writing a replace ack threw; the process stops", { partition: label });
      logger.warn("Cannot record that this replica took a replace", { partition: label, error });
    }).finally(() => this.#inFlight--);
  }

  /** Whether every replica of the partition, as its state names them now, took the replace. */
  async takenByAll(label: string, startOffset: number): Promise<boolean> {
    const { coordinator, keys } = this.#deps;
    const stateKey = `${keys.partitions}${label}`;
    const prefix = keys.replaceAcksOf(label, startOffset);
    const read = await coordinator.txn({
      compare: [],
      success: [{ kind: "range", key: stateKey }, { kind: "range", key: prefix, prefix: true }],
    });
    const [state, acks] = read.responses.map((r) => (r.kind === "range" ? r.kvs : []));
    if (state![0] === undefined) return false;
    const taken = new Set(acks!.map((kv) => Number(kv.key.slice(prefix.length))));
    return decodePartitionState(stateKey, state![0].value).replicas.every((id) => taken.has(id));
  }

  /** Removes the replace of `label` from `startOffset` and its acks: its replaced objects are gone. */
  async settle(label: string, startOffset: number): Promise<void> {
    await this.#deps.coordinator.txn({
      compare: [],
      success: [
        { kind: "delete", key: this.#deps.keys.replace(label, startOffset) },
        { kind: "delete", key: this.#deps.keys.replaceAcksOf(label, startOffset), prefix: true },
      ],
    });
  }

  /** Removes the partition's replaces that end below `firstOffset` (retention passed them) and their acks. */
  async settleBelow(label: string, firstOffset: number): Promise<number> {
    const { coordinator, keys, logger } = this.#deps;
    const passed = (await readCommittedReplaces(coordinator, keys, label, logger)).filter(({ record }) =>
      record.markers.at(-1)!.endOffset < firstOffset
    );
    for (const { startOffset } of passed) await this.settle(label, startOffset);
    return passed.length;
  }
}
