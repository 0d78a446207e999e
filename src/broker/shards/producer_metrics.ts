import { Counter, type Registry } from "prom-client";
import { labelledGaugesOf } from "../../runtime/metrics/labelled_series.ts";
import {
  addProducerCounts,
  noProducerCounts,
  type ProducerCounts,
} from "../../log/producers/producer_states.ts";
import type { ShardSet } from "./shard_runtime.ts";

/** The counts of every shard, summed. */
function countsOf(shards: ShardSet): ProducerCounts {
  const total = noProducerCounts();
  for (const shard of shards.shards) addProducerCounts(total, shard.producerGauges().counts);
  return total;
}

/**
 * The idempotent producers' metrics, read from the partitions at scrape time: producers per
 * partition (those with any), produces answered as duplicates, and produces refused by reason.
 */
export function registerProducerMetrics(registry: Registry, shards: ShardSet): void {
  labelledGaugesOf(registry).add({
    name: "strata_partition_producers",
    help: "Idempotent producers each partition on this node keeps state for (those with any).",
    labelName: "partition",
    entries: function* () {
      for (const shard of shards.shards) yield* shard.producerGauges().producers;
    },
  });
  let duplicates = 0;
  new Counter({
    name: "strata_producer_duplicates_total",
    help:
      "Produces of idempotent producers answered with the offsets of a batch the log holds, appending nothing.",
    registers: [registry],
    collect() {
      const now = countsOf(shards).duplicates;
      this.inc(now - duplicates);
      duplicates = now;
    },
  });
  const refused: Record<keyof Omit<ProducerCounts, "duplicates">, number> = {
    outOfOrder: 0,
    oldEpoch: 0,
    invalidTxnState: 0,
    tooManyProducers: 0,
    coordinatorFenced: 0,
  };
  const reasons: Record<keyof typeof refused, string> = {
    outOfOrder: "out_of_order",
    oldEpoch: "old_epoch",
    invalidTxnState: "invalid_txn_state",
    tooManyProducers: "too_many_producers",
    coordinatorFenced: "coordinator_fenced",
  };
  new Counter({
    name: "strata_producer_refusals_total",
    help:
      "Produces of idempotent producers refused, by reason: out_of_order (a gap, or a new epoch not at 0), " +
      "old_epoch, invalid_txn_state (a batch outside the producer's open transaction), too_many_producers " +
      "(the partition's bound), coordinator_fenced (a transaction marker of an older coordinator).",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      const counts = countsOf(shards);
      for (const key of Object.keys(refused) as (keyof typeof refused)[]) {
        this.inc({ reason: reasons[key] }, counts[key] - refused[key]);
        refused[key] = counts[key];
      }
    },
  });
}
