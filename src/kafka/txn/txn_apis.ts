import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
import { txnPartitionKey } from "../../transactions/core/txn_state.ts";
import { txnStateTopicName } from "../../transactions/log/txn_log.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { groupErrorCode, kafkaErrorCode } from "../kafka_errors.ts";
import { txnCommitOffsets } from "../../groups/core/txn_offsets.ts";
import type { GroupError } from "../../groups/core/group_events.ts";
import {
  encodeTxnOffsetCommitResponse,
  readTxnOffsetCommitRequest,
  txnOffsetCommitVersionMax,
  txnOffsetCommitVersionMin,
} from "./txn_offset_commit_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";
import {
  addOffsetsToTxnVersionMax,
  addOffsetsToTxnVersionMin,
  encodeAddOffsetsToTxnResponse,
  readAddOffsetsToTxnRequest,
} from "./add_offsets_to_txn_codec.ts";
import {
  type AddPartitionsToTxnRequest,
  type AddPartitionsToTxnResponse,
  addPartitionsToTxnVersionMax,
  addPartitionsToTxnVersionMin,
  encodeAddPartitionsToTxnResponse,
  readAddPartitionsToTxnRequest,
} from "./add_partitions_to_txn_codec.ts";
import {
  encodeEndTxnResponse,
  endTxnVersionMax,
  endTxnVersionMin,
  readEndTxnRequest,
} from "./end_txn_codec.ts";
import { txnErrorCode } from "./txn_error_codes.ts";

/**
 * AddPartitionsToTxn 0 to 3: the partitions join the producer's transaction at its coordinator
 * (`TxnCoordinator.add`), whose one answer every partition gets. A partition of a topic that does
 * not exist (or past its partitions, or of an internal topic) is UNKNOWN_TOPIC_OR_PARTITION, and
 * then the others are OPERATION_NOT_ATTEMPTED, as Kafka's broker answers.
 */
export const addPartitionsToTxnApi: KafkaApi = {
  apiKey: apiKey.addPartitionsToTxn,
  name: "add_partitions_to_txn",
  minVersion: addPartitionsToTxnVersionMin,
  maxVersion: addPartitionsToTxnVersionMax,
  async handle(header, body, serving) {
    const request = readAddPartitionsToTxnRequest(header.apiVersion, body);
    const response = await addPartitions(request, serving, header.apiVersion);
    const errorCount = response.results.reduce(
      (n, t) => n + t.partitions.filter((p) => p.errorCode !== kafkaErrorCode.none).length,
      0,
    );
    return { pieces: [encodeAddPartitionsToTxnResponse(header, response)], errorCount };
  },
};

async function addPartitions(
  request: AddPartitionsToTxnRequest,
  serving: KafkaServing,
  version: number,
): Promise<AddPartitionsToTxnResponse> {
  const unknown = new Set<string>();
  const keys: string[] = [];
  for (const topic of request.topics) {
    const info = isInternal(topic.name) ? null : serving.catalog.topic(topic.name);
    for (const partition of topic.partitions) {
      const key = txnPartitionKey(topic.name, partition);
      const exists = info !== null && partition >= 0 && partition < info.partitionsOnline.length;
      if (exists) keys.push(key);
      else unknown.add(key);
    }
  }
  let shared: number = kafkaErrorCode.operationNotAttempted;
  if (unknown.size === 0) {
    const answer = serving.transactions === null ? null : await serving.transactions.add({
      transactionalId: request.transactionalId,
      producerId: request.producerId,
      epoch: request.producerEpoch,
      partitions: keys,
    });
    shared = answer === null
      ? kafkaErrorCode.coordinatorNotAvailable
      : txnErrorCode(answer.error, apiKey.addPartitionsToTxn, version);
  }
  return {
    results: request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partitionIndex) => ({
        partitionIndex,
        errorCode: unknown.has(txnPartitionKey(topic.name, partitionIndex))
          ? kafkaErrorCode.unknownTopicOrPartition
          : shared,
      })),
    })),
  };
}

/** The internal topics, which only their coordinators write to. */
function isInternal(topic: string): boolean {
  return topic === offsetsTopicName || topic === txnStateTopicName;
}

/**
 * AddOffsetsToTxn 0 to 3: the group's partition of `__consumer_offsets` joins the transaction, so
 * that the offsets the producer commits in it (TxnOffsetCommit) are committed or dropped with it.
 */
export const addOffsetsToTxnApi: KafkaApi = {
  apiKey: apiKey.addOffsetsToTxn,
  name: "add_offsets_to_txn",
  minVersion: addOffsetsToTxnVersionMin,
  maxVersion: addOffsetsToTxnVersionMax,
  async handle(header, body, serving) {
    const request = readAddOffsetsToTxnRequest(header.apiVersion, body);
    const errorCode = await addOffsets(request, serving, header.apiVersion);
    return {
      pieces: [encodeAddOffsetsToTxnResponse(header, { errorCode })],
      errorCount: errorCode === kafkaErrorCode.none ? 0 : 1,
    };
  },
};

async function addOffsets(
  request: ReturnType<typeof readAddOffsetsToTxnRequest>,
  serving: KafkaServing,
  version: number,
): Promise<number> {
  const { groups, transactions } = serving;
  if (groups === null || transactions === null) return kafkaErrorCode.coordinatorNotAvailable;
  if (request.groupId === "") return kafkaErrorCode.invalidGroupId;
  if (groups.partitionOf(request.groupId) === null) await groups.ensureOffsetsTopic();
  const partition = groups.partitionOf(request.groupId);
  if (partition === null) return kafkaErrorCode.coordinatorNotAvailable;
  const answer = await transactions.add({
    transactionalId: request.transactionalId,
    producerId: request.producerId,
    epoch: request.producerEpoch,
    partitions: [txnPartitionKey(offsetsTopicName, partition)],
  });
  return txnErrorCode(answer.error, apiKey.addOffsetsToTxn, version);
}

/**
 * EndTxn 0 to 3: commits or aborts the producer's transaction (`TxnCoordinator.end`), answered once
 * the decision is in `__transaction_state`; the markers follow.
 */
export const endTxnApi: KafkaApi = {
  apiKey: apiKey.endTxn,
  name: "end_txn",
  minVersion: endTxnVersionMin,
  maxVersion: endTxnVersionMax,
  async handle(header, body, serving) {
    const request = readEndTxnRequest(header.apiVersion, body);
    const answer = serving.transactions === null ? null : await serving.transactions.end({
      transactionalId: request.transactionalId,
      producerId: request.producerId,
      epoch: request.producerEpoch,
      commit: request.committed,
    });
    const errorCode = answer === null
      ? kafkaErrorCode.coordinatorNotAvailable
      : txnErrorCode(answer.error, apiKey.endTxn, header.apiVersion);
    return {
      pieces: [encodeEndTxnResponse(header, { errorCode })],
      errorCount: errorCode === kafkaErrorCode.none ? 0 : 1,
    };
  },
};

/**
 * TxnOffsetCommit 0 to 3: a group's offsets, committed in the producer's transaction
 * (`txnCommitOffsets`): pending until its end, which commits or drops them. Before v2,
 * COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE, as Kafka's broker answers it.
 */
export const txnOffsetCommitApi: KafkaApi = {
  apiKey: apiKey.txnOffsetCommit,
  name: "txn_offset_commit",
  minVersion: txnOffsetCommitVersionMin,
  maxVersion: txnOffsetCommitVersionMax,
  async handle(header, body, serving) {
    const request = readTxnOffsetCommitRequest(header.apiVersion, body);
    const offsets = request.topics.flatMap((topic) =>
      topic.partitions.map((p) => ({
        topic: topic.name,
        partition: p.partitionIndex,
        offset: p.committedOffset,
        leaderEpoch: p.committedLeaderEpoch,
        metadata: p.committedMetadata,
      }))
    );
    const results = serving.groups === null
      ? offsets.map((o) => ({ ...o, error: "coordinator_not_available" as const }))
      : await txnCommitOffsets(serving.groups, {
        groupId: request.groupId,
        producerId: request.producerId,
        epoch: request.producerEpoch,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        generation: request.generationId,
        offsets,
      });
    const codeOf = (error: GroupError | null) =>
      error === "coordinator_load_in_progress" && header.apiVersion < 2
        ? kafkaErrorCode.coordinatorNotAvailable
        : groupErrorCode(error);
    let at = 0;
    const topics = request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: codeOf(results[at++]!.error),
      })),
    }));
    const errorCount = results.filter((r) => r.error !== null).length;
    return { pieces: [encodeTxnOffsetCommitResponse(header, { topics })], errorCount };
  },
};
