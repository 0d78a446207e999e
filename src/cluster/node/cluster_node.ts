import { InvalidReplicationFactorError } from "../../broker/broker_errors.ts";
import type { TopicOptions } from "../../broker/catalog/topic_options.ts";
import type { ClusterConfig } from "../../config/config.ts";
import type { Coordinator } from "../../coordinator/coordinator.ts";
import { labelOf, type PartitionAddress } from "../../log/partition/partition.ts";
import type { ControlLog } from "../../tier/control/control_log.ts";
import type { TierLeadership } from "../../tier/tier_leadership.ts";
import type { ProduceChecks } from "../../log/batch/produced_batches.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { Registry } from "../../runtime/metrics/metrics.ts";
import type { Rng } from "../../runtime/rng.ts";
import { ClusterController } from "../controller/cluster_controller.ts";
import { ReplaceAcks } from "../replace_acks.ts";
import { ClusterKeys } from "./cluster_keys.ts";
import { ClusterView } from "./cluster_view.ts";
import { EtcdMetadataStore } from "../etcd_metadata_store.ts";
import { FollowerFetcher } from "../replication/follower_fetcher.ts";
import { leaveInSyncSets } from "../replication/fresh_storage.ts";
import { NodeSession } from "./node_session.ts";
import { nodeToken, verifyNodeToken } from "./node_token.ts";
import { noLeader, type PartitionState } from "../controller/partition_state.ts";
import type { LeaderLinkFactory } from "../replication/replica_fetch.ts";
import { ReplicaManager } from "../replication/replica_manager.ts";
import { readCommittedFloor, ReplicatedControlLog } from "../replicated_control_log.ts";
import type { FloorRecord } from "../floor_record.ts";
import { ReplicationMetrics } from "../replication/replication_metrics.ts";
import { TimedCoordinator } from "../../coordinator/timed_coordinator.ts";

export interface ClusterNodeDeps {
  config: ClusterConfig;
  coordinator: Coordinator;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  registry: Registry;
  /** `[system] cluster_id`. */
  configuredClusterId: string;
  /** "host:port" other nodes and clients reach this node's listeners at. */
  kafkaAddress: string;
  httpAddress: string;
  /**
   * The node's data directory is new (first start, or wiped): it leaves the in-sync sets that
   * still list it before it registers (`leaveInSyncSets`).
   */
  freshStorage?: boolean;
  /** Opens a replica-fetch link to another node, given this node's credential. */
  leaderLinks: (token: string) => LeaderLinkFactory;
}

/** A live node as Kafka's Metadata lists it. */
export interface ClusterBroker {
  nodeId: number;
  host: string;
  port: number;
}

/**
 * One node's part in the cluster, wired: its session (lease, registration), its view of the
 * cluster, the controller seat, the metadata document in etcd, its replicas and their fetchers.
 * The broker opens its catalog on `metadata` and hosts its partitions on `replicas` too; the
 * listeners answer from `brokers`, `partitionState` and `leaderHttpAddress`.
 */
export class ClusterNode {
  readonly nodeId: number;
  readonly keys: ClusterKeys;
  readonly metadata: EtcdMetadataStore;
  readonly session: NodeSession;
  readonly view: ClusterView;
  readonly controller: ClusterController;
  readonly replicas: ReplicaManager;
  readonly metrics: ReplicationMetrics;
  /** Which replicas took each replace of remote segments (merge), for every shard of this node. */
  readonly replaceAcks: ReplaceAcks;
  readonly #deps: ClusterNodeDeps;
  #fetcher: FollowerFetcher | null = null;
  /** The shards' control logs, closed before the coordinator they watch through. */
  readonly #controlLogs = new Set<ReplicatedControlLog>();

  private constructor(deps: ClusterNodeDeps, parts: {
    keys: ClusterKeys;
    metadata: EtcdMetadataStore;
    session: NodeSession;
    view: ClusterView;
    metrics: ReplicationMetrics;
  }) {
    this.#deps = deps;
    this.nodeId = deps.config.nodeId;
    this.keys = parts.keys;
    this.metadata = parts.metadata;
    this.session = parts.session;
    this.view = parts.view;
    const { coordinator, clock, logger } = deps;
    const { keys, session, view } = parts;
    this.metrics = parts.metrics;
    this.replaceAcks = new ReplaceAcks({ coordinator, keys, logger, nodeId: this.nodeId });
    this.metrics.watchKeepAlive(() => session.sinceKeepAliveMs());
    this.controller = new ClusterController({
      coordinator,
      keys,
      clock,
      logger,
      session,
      view,
      defaultReplicationFactor: deps.config.replicationFactor,
      minInsyncReplicas: deps.config.minInsyncReplicas,
    });
    this.replicas = new ReplicaManager({
      coordinator,
      keys,
      clock,
      logger,
      session,
      view,
      settings: {
        nodeId: deps.config.nodeId,
        minInsyncReplicas: deps.config.minInsyncReplicas,
        replicaLagMaxMs: deps.config.replicaLagMaxMs,
      },
      metrics: this.metrics,
    });
  }

  /** Registers the node, loads the metadata and the cluster's state, and campaigns for controller. */
  static async open(given: ClusterNodeDeps): Promise<ClusterNode> {
    const metrics = new ReplicationMetrics(given.registry);
    const timed = new TimedCoordinator(given.coordinator, given.clock, (op, seconds) => {
      metrics.etcdLatency.observe({ op }, seconds);
    });
    const deps = { ...given, coordinator: timed };
    const { config, coordinator, clock, rng, logger } = deps;
    const keys = new ClusterKeys(config.etcdPrefix);
    const metadata = new EtcdMetadataStore({
      coordinator,
      key: keys.metadata,
      clock,
      rng,
      logger,
      configuredClusterId: deps.configuredClusterId,
    });
    await metadata.load();
    if (deps.freshStorage === true) await leaveInSyncSets(coordinator, keys, config.nodeId, logger);
    const record = { nodeId: config.nodeId, kafka: deps.kafkaAddress, http: deps.httpAddress };
    const session = await NodeSession.open({
      coordinator,
      keys,
      clock,
      logger,
      record,
      leaseTtlMs: config.leaseTtlMs,
    });
    const view = new ClusterView(coordinator, keys, clock, logger);
    await view.open();
    const node = new ClusterNode(deps, { keys, metadata, session, view, metrics });
    node.controller.start();
    return node;
  }

  /** Starts fetching the partitions this node follows; `checks` paces their appends' checks. */
  startFetching(checks: ProduceChecks): void {
    if (this.#fetcher !== null) return;
    const { config, clock, logger } = this.#deps;
    this.#fetcher = new FollowerFetcher({
      nodeId: config.nodeId,
      view: this.view,
      replicas: this.replicas,
      links: this.#deps.leaderLinks(nodeToken(config.secret, config.nodeId)),
      clock,
      logger,
      checks,
      fetched: (bytes) => this.metrics.replicaFetchedBytes.inc(bytes),
    });
    // Partitions hosted before the fetcher existed: their roles are told again.
    this.replicas.retellRoles();
  }

  /** The tick's duty: the lease's keepalives and the leaders' lag checks. */
  tick(nowMs: number): void {
    this.session.tick(nowMs);
    this.replicas.tick(nowMs);
  }

  /** A shard's control log: the committed floors in etcd, applied on this node through a watch. */
  controlLog(): ControlLog {
    const { coordinator, clock, logger } = this.#deps;
    const log = new ReplicatedControlLog({ coordinator, keys: this.keys, clock, logger });
    this.#controlLogs.add(log);
    return log;
  }

  /** The committed floor of the partition labelled `label`, read from etcd now. */
  committedFloor(label: string): Promise<FloorRecord | null> {
    return readCommittedFloor(this.#deps.coordinator, this.keys, label);
  }

  /** Which partitions this node uploads for: those it leads, under their leader epoch. */
  tierLeadership(): TierLeadership {
    return {
      epochOf: (key) => {
        const address = this.keys.addressOf(`${this.keys.partitions}${key}`);
        const role = address === null ? null : this.replicas.role(address);
        return role?.kind === "leader" ? role.core.leaderEpoch : null;
      },
      onChange: (listener) => this.replicas.onRoleChange((address) => listener(labelOf(address))),
    };
  }

  /** Refuses a new topic the cluster cannot serve: more replicas than live nodes. */
  admitTopic(options: TopicOptions): void {
    const live = this.view.liveNodes().length;
    if (options.replicationFactor !== null && options.replicationFactor > live) {
      throw new InvalidReplicationFactorError(
        `Cannot create topic: replication factor ${options.replicationFactor} exceeds the ${live} live nodes`,
      );
    }
  }

  verifyNode(nodeId: number, token: string): boolean {
    return verifyNodeToken(this.#deps.config.secret, nodeId, token);
  }

  /** The live nodes at their Kafka addresses, in id order. */
  brokers(): ClusterBroker[] {
    return this.view.liveNodes().flatMap((id) => {
      const record = this.view.node(id);
      if (record === null) return [];
      const colon = record.kafka.lastIndexOf(":");
      return [{
        nodeId: id,
        host: record.kafka.slice(0, colon),
        port: Number(record.kafka.slice(colon + 1)),
      }];
    });
  }

  controllerId(): number {
    return this.view.controller()?.nodeId ?? -1;
  }

  partitionState(address: PartitionAddress): PartitionState | null {
    return this.view.partition(address)?.state ?? null;
  }

  /** The HTTP address of a live node, for redirects to a partition's leader. */
  httpAddressOf(nodeId: number): string | null {
    return nodeId === noLeader ? null : this.view.node(nodeId)?.http ?? null;
  }

  /** Stops fetching and watching, and revokes the lease: the node leaves at once. */
  async close(): Promise<void> {
    this.#fetcher?.close();
    for (const log of this.#controlLogs) await log.close();
    this.controller.close();
    this.view.close();
    this.metadata.close();
    await this.session.close();
    await this.#deps.coordinator.close();
  }
}
