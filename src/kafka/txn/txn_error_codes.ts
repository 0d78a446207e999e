import type { TxnError } from "../../transactions/core/txn_events.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import { apiKey } from "../wire/frame_codec.ts";

/** Each answer of the transaction coordinator as Kafka's error code names it. */
const codes: Readonly<Record<TxnError, number>> = {
  none: kafkaErrorCode.none,
  invalid_request: kafkaErrorCode.invalidRequest,
  invalid_transaction_timeout: kafkaErrorCode.invalidTransactionTimeout,
  concurrent_transactions: kafkaErrorCode.concurrentTransactions,
  producer_fenced: kafkaErrorCode.producerFenced,
  invalid_producer_id_mapping: kafkaErrorCode.invalidProducerIdMapping,
  invalid_txn_state: kafkaErrorCode.invalidTxnState,
  // Kafka bounds none of these, and so has no code for them: a policy refuses them, as it does a
  // partition's producers past their bound.
  too_many_partitions: kafkaErrorCode.policyViolation,
  too_many_transactional_ids: kafkaErrorCode.policyViolation,
  too_many_transactions: kafkaErrorCode.policyViolation,
  coordinator_load_in_progress: kafkaErrorCode.coordinatorLoadInProgress,
  coordinator_not_available: kafkaErrorCode.coordinatorNotAvailable,
  not_coordinator: kafkaErrorCode.notCoordinator,
  unknown_server_error: kafkaErrorCode.unknownServerError,
};

/**
 * The first version of each transactional API whose clients understand PRODUCER_FENCED; an older
 * one is answered INVALID_PRODUCER_EPOCH instead, as Kafka's broker answers it.
 */
const producerFencedFrom: Readonly<Record<number, number>> = {
  [apiKey.initProducerId]: 4,
  [apiKey.addPartitionsToTxn]: 2,
  [apiKey.addOffsetsToTxn]: 2,
  [apiKey.endTxn]: 2,
};

/** The Kafka error code of a coordinator's answer to a request of `api` at `version`. */
export function txnErrorCode(error: TxnError, api: number, version: number): number {
  if (error === "producer_fenced" && version < (producerFencedFrom[api] ?? Infinity)) {
    return kafkaErrorCode.invalidProducerEpoch;
  }
  return codes[error];
}
