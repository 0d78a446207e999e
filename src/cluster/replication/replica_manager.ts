import { rethrowBug } from "../../runtime/assert.ts";
import type { PartitionHost } from "../../broker/catalog/catalog.ts";
import type { Leadership, ReplicatedOutcome, Replication } from "../../broker/data_plane.ts";
import type { Coordinator } from "../../coordinator/coordinator.ts";
import { labelOf, type Partition, type PartitionAddress } from "../../log/partition/partition.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { ClusterKeys } from "../node/cluster_keys.ts";
import type { ClusterChange, ClusterView } from "../node/cluster_view.ts";
import type { StoredPartition } from "../controller/controller_core.ts";
import {
  type LeaderEffect,
  type LeaderEvent,
  type LeaderState,
  leaderStep,
  startLeading,
} from "./leader_core.ts";
import type { NodeSession } from "../node/node_session.ts";
import { encodePartitionState, noLeader, withInSync } from "../controller/partition_state.ts";
import { ReplicationMetrics } from "./replication_metrics.ts";

/** What this node is for one partition, from the partition's stored state. */
export type ReplicaRole =
  | { kind: "leader"; core: LeaderState }
  | { kind: "follower"; leaderId: number; leaderEpoch: number }
  | { kind: "none"; leaderId: number | null };

export interface ReplicaSettings {
  nodeId: number;
  minInsyncReplicas: number;
  replicaLagMaxMs: number;
}

export interface ReplicaManagerDeps {
  coordinator: Coordinator;
  keys: ClusterKeys;
  clock: Clock;
  logger: Logger;
  session: NodeSession;
  view: ClusterView;
  settings: ReplicaSettings;
  metrics: ReplicationMetrics;
}

/** Longest pause of an acks=all wait between two looks at its partition's state. */
const replicatedCheckMs = 100;
/** Pause before an in-sync change that failed (etcd unreachable) is decided again. */
const isrRetryMs = 200;

interface Hosted {
  partition: Partition;
  role: ReplicaRole;
  stopActivity: () => void;
}

/**
 * This node's replicas: for each partition it hosts, its role from the partition's state in etcd
 * (leader, follower of another node, or neither) and, while it leads, the leader's replication
 * state (`leaderStep`): followers' progress from their fetches, the high watermark it sets on the
 * log, and the in-sync changes it writes to etcd. A leader acts only while its lease holds by its
 * own clock; its writes compare the partition's revision, so a deposed leader's change is refused.
 * The data plane asks it who leads and when an acks=all produce is replicated.
 */
export class ReplicaManager implements Replication, PartitionHost {
  readonly clustered = true;
  readonly #deps: ReplicaManagerDeps;
  readonly #hosted = new Map<string, Hosted>();
  readonly #roleListeners: Array<(address: PartitionAddress, role: ReplicaRole) => void> = [];
  #lastLagCheckMs = -Infinity;

  constructor(deps: ReplicaManagerDeps) {
    this.#deps = deps;
    deps.view.onChange((change) => this.#changed(change));
  }

  /** Hears every role change of a hosted partition (the follower fetchers do). */
  onRoleChange(listener: (address: PartitionAddress, role: ReplicaRole) => void): void {
    this.#roleListeners.push(listener);
  }

  /** Tells the role listeners every hosted partition's role again (a listener added late). */
  retellRoles(): void {
    for (const hosted of this.#hosted.values()) {
      for (const listener of this.#roleListeners) listener(hosted.partition.address, hosted.role);
    }
  }

  role(address: PartitionAddress): ReplicaRole | null {
    return this.#hosted.get(labelOf(address))?.role ?? null;
  }

  partition(address: PartitionAddress): Partition | null {
    return this.#hosted.get(labelOf(address))?.partition ?? null;
  }

  // ---- PartitionHost -------------------------------------------------------------------------

  host(partition: Partition): void {
    const label = labelOf(partition.address);
    const stopActivity = partition.log.onActivity("replication", () => this.#appended(label));
    // Opened, a log knows nothing of what its replicas hold: consumers read nothing above its start
    // until a leader's followers (or, following, its leader) say how far the in-sync set has it.
    partition.log.setHighWatermark(partition.log.firstOffset);
    this.#hosted.set(label, { partition, role: { kind: "none", leaderId: null }, stopActivity });
    this.#reconcile(label);
  }

  release(partition: Partition): void {
    const label = labelOf(partition.address);
    const hosted = this.#hosted.get(label);
    if (hosted === undefined) return;
    hosted.stopActivity();
    this.#hosted.delete(label);
    this.#setRole(hosted, { kind: "none", leaderId: null });
  }

  purged(): void {}

  // ---- Replication ---------------------------------------------------------------------------

  leadership(address: PartitionAddress): Leadership {
    const hosted = this.#hosted.get(labelOf(address));
    const stored = this.#deps.view.partition(address);
    const leaderId = stored === null || stored.state.leader === noLeader ? null : stored.state.leader;
    if (hosted?.role.kind !== "leader" || !this.#deps.session.leaseHeld()) {
      return { kind: "notLeader", leaderId };
    }
    const core = hosted.role.core;
    return {
      kind: "leader",
      leaderEpoch: core.leaderEpoch,
      isrSize: core.stored.isr.length,
      minInsyncReplicas: this.#deps.settings.minInsyncReplicas,
    };
  }

  async awaitReplicated(
    address: PartitionAddress,
    endOffset: number,
    timeoutMs: number,
  ): Promise<ReplicatedOutcome> {
    const label = labelOf(address);
    const { clock } = this.#deps;
    const deadlineMs = clock.nowMs() + timeoutMs;
    const epoch = this.#leaderCore(label)?.leaderEpoch;
    for (;;) {
      const hosted = this.#hosted.get(label);
      const core = this.#leaderCore(label);
      // A leader whose lease lapsed, or that lost the partition, acknowledges nothing more.
      if (
        hosted === undefined || core === null || core.leaderEpoch !== epoch || !this.#deps.session.leaseHeld()
      ) {
        return "notLeader";
      }
      if (core.stored.isr.length < this.#deps.settings.minInsyncReplicas) return "notEnoughReplicas";
      if (hosted.partition.log.highWatermark >= endOffset) return "replicated";
      const leftMs = deadlineMs - clock.nowMs();
      if (leftMs <= 0) return "timeout";
      await hosted.partition.log.waitForAppend(endOffset - 1, Math.min(leftMs, replicatedCheckMs));
    }
  }

  // ---- the leader's side of replica fetches --------------------------------------------------

  /**
   * A follower fetched from `fetchOffset` under `leaderEpoch`: refused (null) unless this node
   * leads the partition under that epoch with its lease held; else its progress is taken.
   */
  replicaFetched(address: PartitionAddress, replicaId: number, fetchOffset: number, leaderEpoch: number):
    | { ok: true; partition: Partition }
    | { ok: false; reason: "notLeader" | "fencedEpoch" | "unknownEpoch" } {
    const led = this.ledFor(address, leaderEpoch);
    if (led.ok) this.#feed(labelOf(address), { kind: "fetched", replicaId, fetchOffset });
    return led;
  }

  /**
   * The partition, when this node leads it under `leaderEpoch` (a follower's fetch names the
   * epoch it follows); nothing is recorded. A fetch whose log diverges is answered from this alone,
   * so that its offset never counts as progress.
   */
  ledFor(address: PartitionAddress, leaderEpoch: number):
    | { ok: true; partition: Partition }
    | { ok: false; reason: "notLeader" | "fencedEpoch" | "unknownEpoch" } {
    const hosted = this.#hosted.get(labelOf(address));
    if (hosted?.role.kind !== "leader" || !this.#deps.session.leaseHeld()) {
      return { ok: false, reason: "notLeader" };
    }
    const epoch = hosted.role.core.leaderEpoch;
    if (leaderEpoch < epoch) return { ok: false, reason: "fencedEpoch" };
    if (leaderEpoch > epoch) return { ok: false, reason: "unknownEpoch" };
    return { ok: true, partition: hosted.partition };
  }

  /** The tick's duty: lag checks of the partitions this node leads, a few times per `replica_lag_max`. */
  tick(nowMs: number): void {
    const intervalMs = Math.max(10, Math.min(250, this.#deps.settings.replicaLagMaxMs / 10));
    if (nowMs - this.#lastLagCheckMs < intervalMs) return;
    this.#lastLagCheckMs = nowMs;
    for (const [label, hosted] of this.#hosted) {
      if (hosted.role.kind === "leader") this.#feed(label, { kind: "tick" });
    }
    this.#deps.metrics.observe(this.#hosted.values(), nowMs);
  }

  // ---- internals -----------------------------------------------------------------------------

  #leaderCore(label: string): LeaderState | null {
    const role = this.#hosted.get(label)?.role;
    return role?.kind === "leader" ? role.core : null;
  }

  #changed(change: ClusterChange): void {
    if (change.kind === "partition") this.#reconcile(labelOf(change.address));
    // A lease renewed after it lapsed: this node may lead again what it was given.
    if (change.kind === "nodes") { for (const label of this.#hosted.keys()) this.#reconcile(label); }
  }

  #appended(label: string): void {
    const hosted = this.#hosted.get(label);
    if (hosted?.role.kind === "leader") {
      this.#feed(label, { kind: "appended", logEndOffset: hosted.partition.log.nextOffset });
    }
  }

  /** Brings a hosted partition's role in line with its stored state. */
  #reconcile(label: string): void {
    const hosted = this.#hosted.get(label);
    if (hosted === undefined) return;
    const stored = this.#deps.view.partition(hosted.partition.address);
    const desired = this.#desiredRole(hosted, stored);
    if (desired === null) return;
    this.#setRole(hosted, desired);
  }

  /** The role `stored` gives this node, or null when the current one stands (fed the new state). */
  #desiredRole(hosted: Hosted, stored: StoredPartition | null): ReplicaRole | null {
    const me = this.#deps.settings.nodeId;
    const current = hosted.role;
    if (stored === null || !stored.state.replicas.includes(me)) {
      const leaderId = stored === null || stored.state.leader === noLeader ? null : stored.state.leader;
      return current.kind === "none" && current.leaderId === leaderId ? null : { kind: "none", leaderId };
    }
    const { state } = stored;
    if (state.leader === me) {
      if (current.kind === "leader" && current.core.leaderEpoch === state.leaderEpoch) {
        this.#feed(labelOf(hosted.partition.address), {
          kind: "stored",
          state,
          modRevision: stored.modRevision,
        });
        return null;
      }
      // Written for an earlier process of this node (or before it lost its lease): that epoch's
      // high watermark and followers are gone with it, so the controller starts a new one.
      const registered = this.#deps.session.registeredRevision;
      const earlier = state.leaderSession === undefined
        ? stored.modRevision < registered
        : state.leaderSession !== registered;
      if (earlier) {
        return current.kind === "none" && current.leaderId === null ? null : { kind: "none", leaderId: null };
      }
      const log = hosted.partition.log;
      const nowMs = this.#deps.clock.nowMs();
      return {
        kind: "leader",
        core: startLeading(state, stored.modRevision, log.nextOffset, committedOf(hosted.partition), nowMs),
      };
    }
    if (state.leader === noLeader) {
      return current.kind === "none" && current.leaderId === null ? null : { kind: "none", leaderId: null };
    }
    if (
      current.kind === "follower" && current.leaderId === state.leader &&
      current.leaderEpoch === state.leaderEpoch
    ) {
      return null;
    }
    return { kind: "follower", leaderId: state.leader, leaderEpoch: state.leaderEpoch };
  }

  #setRole(hosted: Hosted, role: ReplicaRole): void {
    const log = hosted.partition.log;
    const address = hosted.partition.address;
    hosted.role = role;
    if (role.kind === "leader") {
      log.setReplication({
        leaderEpoch: role.core.leaderEpoch,
        following: false,
        highWatermark: role.core.highWatermark,
      });
      this.#deps.logger.info("leading partition", {
        partition: labelOf(address),
        epoch: role.core.leaderEpoch,
      });
      // The leader's own log end may be past what the state started from (appends since).
      this.#feed(labelOf(address), { kind: "appended", logEndOffset: log.nextOffset });
    } else {
      log.setReplication({
        leaderEpoch: -1,
        following: role.kind === "follower",
        highWatermark: log.highWatermark,
      });
      if (role.kind === "follower") {
        this.#deps.logger.info("following partition", {
          partition: labelOf(address),
          leader: role.leaderId,
          epoch: role.leaderEpoch,
        });
      }
    }
    for (const listener of this.#roleListeners) listener(address, role);
  }

  #feed(label: string, event: LeaderEvent): void {
    const hosted = this.#hosted.get(label);
    if (hosted?.role.kind !== "leader") return;
    const step = leaderStep(hosted.role.core, event, this.#deps.clock.nowMs(), this.#deps.settings);
    hosted.role = { kind: "leader", core: step.state };
    for (const effect of step.effects) this.#run(hosted, step.state, effect);
  }

  #run(hosted: Hosted, core: LeaderState, effect: LeaderEffect): void {
    if (effect.kind === "setHighWatermark") {
      hosted.partition.log.setHighWatermark(effect.highWatermark);
      return;
    }
    const label = labelOf(hosted.partition.address);
    const { coordinator, keys, logger, clock, session } = this.#deps;
    const failed = () => clock.schedule(isrRetryMs, () => this.#feed(label, { kind: "isrWriteFailed" }));
    if (!session.leaseHeld()) return void failed();
    const key = keys.partition(hosted.partition.address);
    const state = withInSync(core.stored, effect.isr, this.#deps.settings.minInsyncReplicas);
    logger.info("in-sync replicas change", { partition: label, isr: effect.isr, reason: effect.reason });
    coordinator.txn({
      compare: [{ key, target: "modRevision", result: "equal", value: effect.expectedModRevision }],
      success: [{ kind: "put", key, value: encodePartitionState(state) }],
    }).then((result) => {
      // Applied: the view brings the new state back (`stored`). Refused: the state moved; the view
      // brings that too, and the change is decided again on it.
      if (!result.succeeded) failed();
    }, (error) => {
      rethrowBug(error, logger, "writing the in-sync replicas threw; the process stops", {
        partition: label,
      });
      logger.warn("Cannot write the in-sync replicas; deciding again", {
        partition: label,
        error,
      });
      failed();
    });
  }
}

/**
 * What a new leader knows to be committed: its high watermark as a follower, or the tiered floor
 * when that is higher (a floor covers committed records only), within its log.
 */
function committedOf(partition: Partition): number {
  const log = partition.log;
  return Math.max(log.highWatermark, Math.min(partition.superblock.tieredUpToOffset, log.nextOffset));
}
