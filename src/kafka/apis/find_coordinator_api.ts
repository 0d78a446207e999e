import { rethrowBug } from "../../runtime/assert.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
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
 * client asks again. Transactional ids have no coordinator (transactions are not served).
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
      : refusal(kafkaErrorCode.coordinatorNotAvailable, "transactions are not served");
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

async function groupCoordinator(groupId: string, serving: KafkaServing): Promise<FindCoordinatorResponse> {
  const groups = serving.groups;
  if (groups === null) {
    return refusal(kafkaErrorCode.coordinatorNotAvailable, "consumer groups are not served");
  }
  if (groupId === "") return refusal(kafkaErrorCode.invalidGroupId, "a group id is not empty");
  let partition = groups.partitionOf(groupId);
  if (partition === null) {
    try {
      await groups.ensureOffsetsTopic();
    } catch (error) {
      rethrowBug(error, serving.logger, "creating the offsets topic threw; the request stops");
      serving.logger.warn("offsets topic not created", { error });
      return refusal(kafkaErrorCode.coordinatorNotAvailable, `${offsetsTopicName} cannot be created now`);
    }
    partition = groups.partitionOf(groupId);
    if (partition === null) {
      return refusal(kafkaErrorCode.coordinatorNotAvailable, `${offsetsTopicName} is missing`);
    }
  }
  const cluster = serving.cluster;
  // When this node coordinates the group, it answers once the group is loaded (or shortly).
  await groups.whenLoaded(groupId, coordinatorLoadWaitMs);
  if (cluster === null) return found(serving.broker);
  const address = serving.catalog.partitionAddress(offsetsTopicName, partition);
  const leader = address === null ? null : cluster.partitionState(address)?.leader ?? null;
  const broker = leader === null ? undefined : cluster.brokers().find((b) => b.nodeId === leader);
  if (broker === undefined) {
    return refusal(
      kafkaErrorCode.coordinatorNotAvailable,
      `no node leads ${offsetsTopicName}/${partition} now`,
    );
  }
  return found(broker);
}
