import { rethrowBug } from "../../runtime/assert.ts";
import { type Coordinator, txnOpsMax } from "../../coordinator/coordinator.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ClusterKeys } from "../node/cluster_keys.ts";
import type { ClusterChange, ClusterView } from "../node/cluster_view.ts";
import {
  type ControllerEvent,
  type ControllerState,
  controllerStep,
  type CreatePartitions,
  type DeletePartitions,
  initialControllerState,
  type WritePartition,
} from "./controller_core.ts";
import type { NodeSession } from "../node/node_session.ts";
import { decodePartitionState, encodePartitionState } from "./partition_state.ts";

export interface ClusterControllerDeps {
  coordinator: Coordinator;
  keys: ClusterKeys;
  clock: Clock;
  logger: Logger;
  session: NodeSession;
  view: ClusterView;
  /** `[cluster] replication_factor`. */
  defaultReplicationFactor: number;
  /** `[cluster] min_insync_replicas`. */
  minInsyncReplicas: number;
}

/** Pause before a write that failed (etcd unreachable) is decided again. */
const writeRetryMs = 200;

/**
 * The controller seat and, while this node holds it, the controller's work. Every node campaigns
 * with a create-if-absent transaction on `controller` bound to its lease; the winner's epoch is
 * the key's create revision. While it holds the seat (and its lease by its own clock) it feeds
 * the view's changes to `controllerStep` and runs the writes it decides, each comparing the
 * partition's revision and the controller key's create revision: a deposed controller's write
 * changes nothing.
 */
export class ClusterController {
  readonly #deps: ClusterControllerDeps;
  #epoch: number | null = null;
  #core: ControllerState = initialControllerState();
  #campaigning = false;
  #closed = false;

  constructor(deps: ClusterControllerDeps) {
    this.#deps = deps;
    deps.view.onChange((change) => this.#changed(change));
    deps.session.onRenewed(() => this.#campaign());
  }

  /** The epoch this node controls the cluster under, or null when it does not. */
  epoch(): number | null {
    return this.#epoch !== null && this.#deps.session.leaseHeld() ? this.#epoch : null;
  }

  start(): void {
    this.#campaign();
  }

  close(): void {
    this.#closed = true;
    this.#epoch = null;
  }

  /** Campaigns unless a campaign is running, or the lease is lapsing (its renewal campaigns). */
  #campaign(): void {
    if (this.#campaigning || this.#closed || !this.#deps.session.leaseHeld()) return;
    this.#campaigning = true;
    this.#tryCampaign().then(
      () => {
        this.#campaigning = false;
      },
      (error) => {
        this.#campaigning = false;
        rethrowBug(error, this.#deps.logger, "campaigning for controller threw; the process stops");
        this.#deps.logger.warn("Cannot campaign for controller; trying again", { error });
        this.#deps.clock.schedule(writeRetryMs, () => this.#campaign());
      },
    );
  }

  async #tryCampaign(): Promise<void> {
    const { coordinator, keys, session } = this.#deps;
    const key = keys.controller;
    const result = await coordinator.txn({
      compare: [{ key, target: "createRevision", result: "equal", value: 0 }],
      success: [{ kind: "put", key, value: String(session.record.nodeId), lease: session.leaseId }],
      failure: [{ kind: "range", key }],
    });
    if (result.succeeded) {
      this.#become(result.revision);
      return;
    }
    const read = result.responses[0];
    const holder = read?.kind === "range" ? read.kvs[0] : undefined;
    // Ours from an earlier campaign on this lease: the seat is held already.
    if (holder !== undefined && holder.lease === session.leaseId) this.#become(holder.createRevision);
  }

  #become(epoch: number): void {
    if (this.#closed) return;
    const { view, logger, session } = this.#deps;
    this.#epoch = epoch;
    logger.info("controller elected", { node_id: session.record.nodeId, epoch });
    this.#core = initialControllerState(this.#deps.defaultReplicationFactor, this.#deps.minInsyncReplicas);
    this.#feed({ kind: "nodes", live: view.liveNodes(), registered: new Map(view.registeredRevisions()) });
    for (const [key, stored] of view.partitions()) this.#feed({ kind: "partition", key, stored });
    const topics = view.topics();
    if (topics !== null) this.#feed({ kind: "topics", topics });
  }

  #changed(change: ClusterChange): void {
    if (change.kind === "controller") {
      if (change.nodeId === null) this.#campaign();
      else if (this.#epoch !== null && change.epoch !== this.#epoch) this.#depose(change.epoch);
      return;
    }
    if (this.#epoch === null) return;
    if (change.kind === "nodes") {
      const registered = new Map(this.#deps.view.registeredRevisions());
      this.#feed({ kind: "nodes", live: change.live, registered });
    } else if (change.kind === "topics") this.#feed({ kind: "topics", topics: change.topics });
    else this.#feed({ kind: "partition", key: change.key, stored: change.stored });
  }

  #depose(epoch: number): void {
    this.#deps.logger.info("controller deposed", { epoch: this.#epoch, by_epoch: epoch });
    this.#epoch = null;
  }

  #feed(event: ControllerEvent): void {
    const step = controllerStep(this.#core, event);
    this.#core = step.state;
    for (const effect of step.effects) {
      if (effect.kind === "writePartition") this.#write(effect);
      else this.#place(effect);
    }
  }

  /**
   * Creates a new topic's partition states (each compared absent) or deletes a dropped topic's,
   * comparing the seat's epoch, in transactions of at most `txnOpsMax` - 1 operations.
   */
  #place(effect: CreatePartitions | DeletePartitions): void {
    const epoch = this.epoch();
    if (epoch === null) return;
    const { coordinator, keys, logger, clock } = this.#deps;
    const seat = {
      key: keys.controller,
      target: "createRevision" as const,
      result: "equal" as const,
      value: epoch,
    };
    const txns = effect.kind === "deletePartitions"
      ? [{
        compare: [seat],
        // The topic's committed floors and replaces, and the replaces' acks, go with its partition states.
        success: [effect.topicKey, ...this.#controlStateOf(effect.topicKey)].map((key) => ({
          kind: "delete" as const,
          key,
          prefix: true,
        })),
      }]
      : chunks(effect.states, txnOpsMax / 2 - 1).map((part) => ({
        compare: [
          seat,
          ...part.map((p) => ({
            key: `${effect.topicKey}${p.partitionId}`,
            target: "createRevision" as const,
            result: "equal" as const,
            value: 0,
          })),
        ],
        success: part.map((p) => ({
          kind: "put" as const,
          key: `${effect.topicKey}${p.partitionId}`,
          value: encodePartitionState(p.state),
        })),
      }));
    logger.info(
      effect.kind === "deletePartitions" ? "partition states deleted" : "partition states created",
      {
        topic: effect.topicKey,
        partitions: effect.kind === "createPartitions" ? effect.states.length : undefined,
      },
    );
    Promise.all(txns.map((txn) => coordinator.txn(txn))).then((results) => {
      // Applied: the view brings the states (or their absence) back and the placement ends then.
      if (results.every((r) => r.succeeded)) return;
      clock.schedule(
        writeRetryMs,
        () => this.#epoch !== null && this.#feed({ kind: "placementFailed", topicKey: effect.topicKey }),
      );
    }, (error) => {
      rethrowBug(error, logger, "placing a topic's partitions threw; the process stops", {
        topic: effect.topicKey,
      });
      logger.warn("Cannot place a topic's partitions; deciding again", {
        topic: effect.topicKey,
        error,
      });
      clock.schedule(
        writeRetryMs,
        () => this.#epoch !== null && this.#feed({ kind: "placementFailed", topicKey: effect.topicKey }),
      );
    });
  }

  /** The prefixes of the floors, replaces and replace acks of the topic whose partition states are under `topicKey`. */
  #controlStateOf(topicKey: string): string[] {
    const keys = this.#deps.keys;
    const topic = topicKey.slice(keys.partitions.length);
    return [keys.floors, keys.replaces, keys.replaceAcks].map((prefix) => `${prefix}${topic}`);
  }

  #write(effect: WritePartition): void {
    const epoch = this.epoch();
    if (epoch === null) return;
    const { coordinator, keys, logger, clock } = this.#deps;
    logger.info("partition state change", { key: effect.key, reason: effect.reason, epoch });
    coordinator.txn({
      compare: [
        { key: effect.key, target: "modRevision", result: "equal", value: effect.expectedModRevision },
        { key: keys.controller, target: "createRevision", result: "equal", value: epoch },
      ],
      success: [{ kind: "put", key: effect.key, value: encodePartitionState(effect.state) }],
      failure: [{ kind: "range", key: effect.key }, { kind: "range", key: keys.controller }],
    }).then(
      (result) => {
        if (result.succeeded) return;
        // Decided again on what the store holds now, or given up when the seat is someone else's.
        const [partition, controller] = result.responses;
        const seat = controller?.kind === "range" ? controller.kvs[0] : undefined;
        if (seat?.createRevision !== epoch) return this.#depose(seat?.createRevision ?? 0);
        const kv = partition?.kind === "range" ? partition.kvs[0] : undefined;
        const stored = kv === undefined
          ? null
          : { state: decodePartitionState(kv.key, kv.value), modRevision: kv.modRevision };
        this.#feed({ kind: "partition", key: effect.key, stored });
      },
      (error) => {
        rethrowBug(error, logger, "writing a partition's state threw; the process stops", {
          key: effect.key,
        });
        logger.warn("Cannot write a partition's state; deciding again", {
          key: effect.key,
          error,
        });
        clock.schedule(
          writeRetryMs,
          () => this.#epoch !== null && this.#feed({ kind: "writeFailed", key: effect.key }),
        );
      },
    );
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let at = 0; at < items.length; at += size) out.push(items.slice(at, at + size));
  return out;
}
