import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { labelOf, type Partition } from "../../log/partition/partition.ts";
import { labelledGaugesOf } from "../../runtime/metrics/labelled_series.ts";
import type { LeaderState } from "./leader_core.ts";

/** A hosted partition as the metrics read it: its log and, while it leads, its leader state. */
export interface ReplicaGaugeSource {
  partition: Partition;
  role: { kind: "leader"; core: LeaderState } | { kind: "follower" | "none" };
}

/**
 * The cluster's gauges and etcd's latency: partitions led and under-replicated, the in-sync set
 * size and leader epoch of each partition led, the followers' lag behind the leader in records and
 * milliseconds (the worst per partition), and the time since the last keepalive etcd answered.
 * Gauges are read from the state at scrape time; `observe` keeps the last sample of the hosted set.
 */
export class ReplicationMetrics {
  readonly etcdLatency: Histogram<"op">;
  readonly replicaFetchedBytes: Counter;
  #sources: ReplicaGaugeSource[] = [];
  #nowMs = 0;
  #sinceKeepAliveMs: () => number = () => 0;

  constructor(registry: Registry) {
    const registers = [registry];
    this.replicaFetchedBytes = new Counter({
      name: "strata_cluster_replica_fetched_bytes_total",
      help: "Record bytes this node appended as a follower, copied from its partitions' leaders.",
      registers,
    });
    this.etcdLatency = new Histogram({
      name: "strata_cluster_etcd_request_duration_seconds",
      help: "Time an etcd request took, by operation (txn, range, lease_grant, lease_keepalive).",
      labelNames: ["op"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    const read = {
      keepAliveAgeMs: () => this.#sinceKeepAliveMs(),
      leaders: () => this.#leaders(),
      sources: () => this.#sources,
      nowMs: () => this.#nowMs,
    };
    new Gauge({
      name: "strata_cluster_lease_keepalive_age_seconds",
      help:
        "Time since the send time of the last keepalive etcd answered; a leader stops acting past lease_ttl.",
      registers,
      collect() {
        this.set(read.keepAliveAgeMs() / 1000);
      },
    });
    new Gauge({
      name: "strata_cluster_partitions_led",
      help: "Partitions this node leads.",
      registers,
      collect() {
        this.set(read.leaders().length);
      },
    });
    new Gauge({
      name: "strata_cluster_under_replicated_partitions",
      help: "Partitions this node leads whose in-sync set is smaller than their replicas.",
      registers,
      collect() {
        this.set(read.leaders().filter((c) => c.stored.isr.length < c.stored.replicas.length).length);
      },
    });
    registerPartitionGauges(registry, read);
  }

  /** Where the keepalive age is read from: the node's session. */
  watchKeepAlive(sinceKeepAliveMs: () => number): void {
    this.#sinceKeepAliveMs = sinceKeepAliveMs;
  }

  /** The hosted partitions as of `nowMs`, for the next scrape. */
  observe(sources: Iterable<ReplicaGaugeSource>, nowMs: number): void {
    this.#sources = [...sources];
    this.#nowMs = nowMs;
  }

  #leaders(): LeaderState[] {
    return this.#sources.flatMap((s) => s.role.kind === "leader" ? [s.role.core] : []);
  }
}

function worstLag(core: LeaderState): { records: number; caughtUpAtMs: number } {
  let records = 0;
  let caughtUpAtMs = Infinity;
  for (const progress of core.followers.values()) {
    records = Math.max(records, core.logEndOffset - Math.max(progress.fetchOffset, 0));
    caughtUpAtMs = Math.min(caughtUpAtMs, progress.caughtUpAtMs);
  }
  return { records, caughtUpAtMs };
}

/** The gauges labelled by partition, one series per partition this node leads, written a piece at a time. */
function registerPartitionGauges(
  registry: Registry,
  read: { sources(): ReplicaGaugeSource[]; nowMs(): number },
): void {
  const gauges = labelledGaugesOf(registry);
  const perLeader = (value: (core: LeaderState) => number) =>
    function* (): Iterable<[string, number]> {
      for (const s of read.sources()) {
        if (s.role.kind === "leader") yield [labelOf(s.partition.address), value(s.role.core)];
      }
    };
  gauges.add({
    name: "strata_cluster_isr_size",
    help: "In-sync replicas of each partition this node leads, itread among them.",
    labelName: "partition",
    entries: perLeader((c) => c.stored.isr.length),
  });
  gauges.add({
    name: "strata_cluster_leader_epoch",
    help: "The leader epoch of each partition this node leads.",
    labelName: "partition",
    entries: perLeader((c) => c.leaderEpoch),
  });
  gauges.add({
    name: "strata_cluster_follower_lag_records",
    help: "Records the furthest-behind follower lacks, per partition this node leads.",
    labelName: "partition",
    entries: perLeader((c) => worstLag(c).records),
  });
  gauges.add({
    name: "strata_cluster_follower_lag_seconds",
    help: "Time since the furthest-behind follower was last caught up, per partition this node leads.",
    labelName: "partition",
    entries: perLeader((c) => {
      const { caughtUpAtMs } = worstLag(c);
      return caughtUpAtMs === Infinity ? 0 : Math.max(0, read.nowMs() - caughtUpAtMs) / 1000;
    }),
  });
}
