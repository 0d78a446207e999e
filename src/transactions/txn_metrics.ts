import { Counter, Gauge, type Registry } from "prom-client";
import type { TxnCoordinator } from "./txn_coordinator.ts";

/** A counter that reports a count the coordinator keeps, at scrape time. */
function countFrom(registry: Registry, name: string, help: string, read: () => number): void {
  let reported = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      this.inc(now - reported);
      reported = now;
    },
  });
}

/**
 * The transaction coordinator's metrics, read from its state at scrape time: the transactional ids
 * it coordinates and their open transactions, transactions ended by outcome, those aborted at their
 * timeout, marker writes that failed, and the loads of `__transaction_state` partitions (how many,
 * their total and longest time).
 */
export function registerTxnMetrics(registry: Registry, coordinator: TxnCoordinator): void {
  new Gauge({
    name: "strata_txn_transactional_ids",
    help: "Transactional ids whose __transaction_state partition this node leads and has loaded.",
    registers: [registry],
    collect() {
      this.set(coordinator.gauges().transactionalIds);
    },
  });
  new Gauge({
    name: "strata_txn_open_transactions",
    help: "Transactions open or ending (markers being written) among the ids this node coordinates.",
    registers: [registry],
    collect() {
      this.set(coordinator.gauges().openTransactions);
    },
  });
  const reported = { committed: 0, aborted: 0 };
  new Counter({
    name: "strata_txn_ended_total",
    help: "Transactions whose every marker is written, by result: commit or abort.",
    labelNames: ["result"],
    registers: [registry],
    collect() {
      const { committed, aborted } = coordinator.ended;
      this.inc({ result: "commit" }, committed - reported.committed);
      this.inc({ result: "abort" }, aborted - reported.aborted);
      reported.committed = committed;
      reported.aborted = aborted;
    },
  });
  countFrom(
    registry,
    "strata_txn_timed_out_total",
    "Transactions aborted by their coordinator because they outlived their transaction.timeout.ms.",
    () => coordinator.timedOut,
  );
  countFrom(
    registry,
    "strata_txn_marker_failures_total",
    "Writes of a transaction's markers that failed for some partition and were tried again.",
    () => coordinator.markerFailures,
  );
  countFrom(
    registry,
    "strata_txn_partition_loads_total",
    "Loads of a __transaction_state partition this node came to lead that completed.",
    () => coordinator.loads.count,
  );
  countFrom(
    registry,
    "strata_txn_partition_load_seconds_total",
    "Time spent loading __transaction_state partitions, from leadership to serving, over every completed load.",
    () => coordinator.loads.totalMs / 1000,
  );
  new Gauge({
    name: "strata_txn_partition_load_seconds_max",
    help: "The longest load of a __transaction_state partition since the process started.",
    registers: [registry],
    collect() {
      this.set(coordinator.loads.maxMs / 1000);
    },
  });
}
