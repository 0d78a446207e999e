import { pathIdOf } from "./path_ids.ts";
import type { TxnError } from "../../transactions/core/txn_events.ts";
import {
  kafkaTxnStateNames,
  topicPartitionOfKey,
  type TxnPhase,
  type TxnState,
} from "../../transactions/core/txn_state.ts";
import type { TxnCoordinator } from "../../transactions/txn_coordinator.ts";
import { ApiError, badRequest, coordinatorRefusal, notFound } from "../api_errors.ts";

/** Longest transactional id the HTTP API takes (Kafka takes any string; this bounds a path segment). */
export const transactionalIdCharsMax = 255;

/** The phases of an open transaction: one with partitions, or whose end is being written. */
const openPhases: readonly TxnPhase[] = ["ongoing", "prepare_commit", "prepare_abort"];

/** The phase of each of Kafka's state names. */
const phaseOfKafkaName = new Map(
  Object.entries(kafkaTxnStateNames).map(([phase, name]) => [name, phase as TxnPhase]),
);

/** The transactional id of a path segment: URL-decoded, 1 to `transactionalIdCharsMax` characters. */
export function transactionalIdOf(segment: string | undefined): string {
  return pathIdOf(segment, "transactional id", "invalid_transactional_id", transactionalIdCharsMax);
}

function coordinatorOf(transactions: TxnCoordinator | null): TxnCoordinator {
  if (transactions === null) {
    throw notFound("Cannot serve transactions: the Kafka listener is not enabled ([kafka] enabled)");
  }
  return transactions;
}

/** The HTTP answer to a coordinator's refusal to describe an id. */
function txnApiError(transactionalId: string, error: TxnError): ApiError {
  const message = `Cannot describe transactional id ${transactionalId}: ${error.replaceAll("_", " ")}`;
  return coordinatorRefusal(error, message) ?? new ApiError(500, error, message);
}

/** One transactional id's state, as the HTTP API shows it. */
function txnView(state: TxnState) {
  return {
    transactional_id: state.transactionalId,
    producer_id: state.producerId,
    producer_epoch: state.producerEpoch,
    state: kafkaTxnStateNames[state.phase],
    timeout_ms: state.timeoutMs,
    started_at: state.startedAtMs < 0 ? null : state.startedAtMs,
    updated_at: state.updatedAtMs,
    partitions: state.partitions.map(topicPartitionOfKey),
  };
}

/**
 * The phases `?state=` names (Kafka's state names, comma-separated, or `all`); without it, those of
 * open transactions.
 */
function phasesOf(url: URL): ReadonlySet<TxnPhase> {
  const asked = url.searchParams.get("state");
  if (asked === null) return new Set(openPhases);
  if (asked === "all") return new Set(phaseOfKafkaName.values());
  const phases = new Set<TxnPhase>();
  for (const name of asked.split(",")) {
    const phase = phaseOfKafkaName.get(name);
    if (phase === undefined) {
      throw badRequest(
        "invalid_state",
        `Cannot list transactions: state ${JSON.stringify(name)} is none of all, ${
          [...phaseOfKafkaName.keys()].join(", ")
        }`,
      );
    }
    phases.add(phase);
  }
  return phases;
}

/**
 * GET /transactions: the transactional ids this node coordinates whose state `?state=` names
 * (default: the open transactions, Ongoing, PrepareCommit and PrepareAbort), by id.
 */
export function transactionsView(transactions: TxnCoordinator | null, url: URL) {
  const coordinator = coordinatorOf(transactions);
  const phases = phasesOf(url);
  const listed = [...coordinator.states()].filter((s) => phases.has(s.phase));
  listed.sort((
    a,
    b,
  ) => (a.transactionalId < b.transactionalId ? -1 : a.transactionalId > b.transactionalId ? 1 : 0));
  return { transactions: listed.map(txnView) };
}

/** GET /transactions/{id}: the id's state where this node coordinates it; 404 when none is known. */
export function transactionView(transactions: TxnCoordinator | null, transactionalId: string) {
  const described = coordinatorOf(transactions).describe(transactionalId);
  if (described.error !== "none") throw txnApiError(transactionalId, described.error);
  if (described.state === null) {
    throw notFound(`Cannot describe transactional id ${transactionalId}: no producer uses it`);
  }
  return txnView(described.state);
}
