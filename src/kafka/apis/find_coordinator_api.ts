import { rethrowBug } from "../../runtime/assert.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
import { txnStateTopicName } from "../../transactions/log/txn_log.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import {
  coordinatorKeyType,
  encodeFindCoordinatorResponse,
  type FindCoordinatorResponse,
  findCoordinatorVersionMax,
  findCoordinatorVersionMin,
  readFindCoordinatorRequest,
} from "./find_coordinator_codec.ts";
import type { MetadataBroker } from "./metadata_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";

/**
 * FindCoordinator 0 to 3: a group's coordinator is the leader of its partition of
 * `__consumer_offsets` (this broker on a single node), which the first request for a group creates;
 * while it is being created, or no node leads the partition, COORDINATOR_NOT_AVAILABLE, and the
 * client asks again. A transactional id's coordinator (key type 1) is found the same way, in
 * `__transaction_state`.
 * librdkafka also reads the API's presence as the sign that a broker takes LZ4 batches.
 */
export const findCoordinatorApi: KafkaApi = {
  apiKey: apiKey.findCoordinator,
  name: "find_coordinator",
  minVersion: findCoordinatorVersionMin,
  maxVersion: findCoordinatorVersionMax,
  async handle(header, body, serving) {
    const request = readFindCoordinatorRequest(header.apiVersion, body);
    const response = request.keyType === coordinatorKeyType.group
      ? await groupCoordinator(request.key, serving)
      : request.keyType === coordinatorKeyType.transaction
      ? await txnCoordinator(request.key, serving)
      : refusal(
        kafkaErrorCode.invalidRequest,
        `key type ${request.keyType} is neither a group nor a transaction`,
      );
    return {
      pieces: [encodeFindCoordinatorResponse(header, response)],
      errorCount: response.errorCode === kafkaErrorCode.none ? 0 : 1,
    };
  },
};

/** How long FindCoordinator waits for this node to load the group it coordinates, at most. */
export const coordinatorLoadWaitMs = 5000;

function refusal(errorCode: number, errorMessage: string): FindCoordinatorResponse {
  return { errorCode, errorMessage, nodeId: -1, host: "", port: -1 };
}

function found(broker: MetadataBroker): FindCoordinatorResponse {
  return {
    errorCode: kafkaErrorCode.none,
    errorMessage: null,
    nodeId: broker.nodeId,
    host: broker.host,
    port: broker.port,
  };
}

/** What FindCoordinator asks of a coordinator: the partition of a key, the topic's creation, its load. */
interface Coordinated {
  topicName: string;
  partitionOf(key: string): number | null;
  ensureTopic(): Promise<void>;
  whenLoaded(key: string, timeoutMs: number): Promise<void>;
}

function groupsCoordinated(serving: KafkaServing): Coordinated | null {
  const groups = serving.groups;
  if (groups === null) return null;
  return {
    topicName: offsetsTopicName,
    partitionOf: (key) => groups.partitionOf(key),
    ensureTopic: () => groups.ensureOffsetsTopic(),
    whenLoaded: (key, timeoutMs) => groups.whenLoaded(key, timeoutMs),
  };
}

function transactionsCoordinated(serving: KafkaServing): Coordinated | null {
  const transactions = serving.transactions;
  if (transactions === null) return null;
  return {
    topicName: txnStateTopicName,
    partitionOf: (key) => transactions.partitionOf(key),
    ensureTopic: () => transactions.ensureStateTopic(),
    whenLoaded: (key, timeoutMs) => transactions.whenLoaded(key, timeoutMs),
  };
}

async function groupCoordinator(groupId: string, serving: KafkaServing): Promise<FindCoordinatorResponse> {
  const groups = groupsCoordinated(serving);
  if (groups === null) {
    return refusal(kafkaErrorCode.coordinatorNotAvailable, "consumer groups are not served");
  }
  if (groupId === "") return refusal(kafkaErrorCode.invalidGroupId, "a group id is not empty");
  return await coordinatorOf(groups, groupId, serving);
}

async function txnCoordinator(
  transactionalId: string,
  serving: KafkaServing,
): Promise<FindCoordinatorResponse> {
  const transactions = transactionsCoordinated(serving);
  if (transactions === null) {
    return refusal(kafkaErrorCode.coordinatorNotAvailable, "transactions are not served");
  }
  if (transactionalId === "") {
    return refusal(kafkaErrorCode.invalidRequest, "a transactional id is not empty");
  }
  return await coordinatorOf(transactions, transactionalId, serving);
}

/** The node that leads the key's partition of the coordinator's topic, which is created first if missing. */
async function coordinatorOf(
  coordinated: Coordinated,
  key: string,
  serving: KafkaServing,
): Promise<FindCoordinatorResponse> {
  const topicName = coordinated.topicName;
  let partition = coordinated.partitionOf(key);
  if (partition === null) {
    try {
      await coordinated.ensureTopic();
    } catch (error) {
      rethrowBug(error, serving.logger, `creating ${topicName} threw; the request stops`);
      serving.logger.warn("internal topic not created", { topic: topicName, error });
      return refusal(kafkaErrorCode.coordinatorNotAvailable, `${topicName} cannot be created now`);
    }
    partition = coordinated.partitionOf(key);
    if (partition === null) {
      return refusal(kafkaErrorCode.coordinatorNotAvailable, `${topicName} is missing`);
    }
  }
  const cluster = serving.cluster;
  // When this node coordinates the key, it answers once its partition is loaded (or shortly).
  await coordinated.whenLoaded(key, coordinatorLoadWaitMs);
  if (cluster === null) return found(serving.broker);
  const address = serving.catalog.partitionAddress(topicName, partition);
  const leader = address === null ? null : cluster.partitionState(address)?.leader ?? null;
  const broker = leader === null ? undefined : cluster.brokers().find((b) => b.nodeId === leader);
  if (broker === undefined) {
    return refusal(
      kafkaErrorCode.coordinatorNotAvailable,
      `no node leads ${topicName}/${partition} now`,
    );
  }
  return found(broker);
}
