import { kafkaTxnStateNames, topicPartitionOfKey, type TxnState } from "../../transactions/core/txn_state.ts";
import type { KafkaApi } from "../kafka_api.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import { apiKey } from "../wire/frame_codec.ts";
import { txnErrorCode } from "./txn_error_codes.ts";
import {
  type DescribedTransaction,
  encodeDescribeTransactionsResponse,
  encodeListTransactionsResponse,
  type ListTransactionsRequest,
  readDescribeTransactionsRequest,
  readListTransactionsRequest,
  txnViewsVersion,
} from "./txn_views_codec.ts";

/**
 * DescribeTransactions 0: each transactional id's state at this node, its coordinator: its
 * producer, timeout, start and partitions; NOT_COORDINATOR where another node coordinates it,
 * TRANSACTIONAL_ID_NOT_FOUND where none knows it.
 */
export const describeTransactionsApi: KafkaApi = {
  apiKey: apiKey.describeTransactions,
  name: "describe_transactions",
  minVersion: txnViewsVersion,
  maxVersion: txnViewsVersion,
  handle(header, body, serving) {
    const ids = readDescribeTransactionsRequest(header.apiVersion, body);
    const described = ids.map((transactionalId): DescribedTransaction => {
      const found = serving.transactions?.describe(transactionalId) ??
        { error: "coordinator_not_available" as const, state: null };
      if (found.state === null) {
        const errorCode = found.error === "none"
          ? kafkaErrorCode.transactionalIdNotFound
          : txnErrorCode(found.error, apiKey.describeTransactions, header.apiVersion);
        return { ...noTransaction, errorCode, transactionalId };
      }
      return describedOf(found.state);
    });
    return Promise.resolve({
      pieces: [encodeDescribeTransactionsResponse(header, described)],
      errorCount: described.filter((d) => d.errorCode !== kafkaErrorCode.none).length,
    });
  },
};

const noTransaction = {
  state: "",
  timeoutMs: 0,
  startTimeMs: -1,
  producerId: -1,
  producerEpoch: -1,
  topics: [],
};

function describedOf(state: TxnState): DescribedTransaction {
  const byTopic = new Map<string, number[]>();
  for (const key of state.partitions) {
    const { topic, partition } = topicPartitionOfKey(key);
    const partitions = byTopic.get(topic);
    if (partitions === undefined) byTopic.set(topic, [partition]);
    else partitions.push(partition);
  }
  return {
    errorCode: kafkaErrorCode.none,
    transactionalId: state.transactionalId,
    state: kafkaTxnStateNames[state.phase],
    timeoutMs: state.timeoutMs,
    startTimeMs: state.startedAtMs,
    producerId: state.producerId,
    producerEpoch: state.producerEpoch,
    topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
  };
}

/**
 * ListTransactions 0: the transactional ids this node coordinates, with their producer and state,
 * filtered by state names and producer ids (none: all); a state name Kafka does not have is
 * answered back as unknown.
 */
export const listTransactionsApi: KafkaApi = {
  apiKey: apiKey.listTransactions,
  name: "list_transactions",
  minVersion: txnViewsVersion,
  maxVersion: txnViewsVersion,
  handle(header, body, serving) {
    const request = readListTransactionsRequest(header.apiVersion, body);
    const known = new Set(Object.values(kafkaTxnStateNames));
    const unknownStateFilters = request.stateFilters.filter((f) => !known.has(f));
    const transactions = serving.transactions === null ? [] : listed(serving.transactions.states(), request);
    const errorCode = serving.transactions === null
      ? kafkaErrorCode.coordinatorNotAvailable
      : kafkaErrorCode.none;
    return Promise.resolve({
      pieces: [encodeListTransactionsResponse(header, { errorCode, unknownStateFilters, transactions })],
      errorCount: errorCode === kafkaErrorCode.none ? 0 : 1,
    });
  },
};

function listed(states: Iterable<TxnState>, request: ListTransactionsRequest) {
  const phases = new Set(request.stateFilters);
  const producers = new Set(request.producerIdFilters);
  const out = [];
  for (const state of states) {
    const name = kafkaTxnStateNames[state.phase];
    if (phases.size > 0 && !phases.has(name)) continue;
    if (producers.size > 0 && !producers.has(state.producerId)) continue;
    out.push({ transactionalId: state.transactionalId, producerId: state.producerId, state: name });
  }
  return out;
}
