import { rethrowBug } from "../../runtime/assert.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import { apiKey } from "../wire/frame_codec.ts";
import {
  encodeInitProducerIdResponse,
  type InitProducerIdRequest,
  type InitProducerIdResponse,
  initProducerIdVersionMax,
  initProducerIdVersionMin,
  readInitProducerIdRequest,
} from "./init_producer_id_codec.ts";

/**
 * InitProducerId 0 to 4 for idempotent producers: a new producer id, unique in the cluster
 * (`ProducerIds`), at epoch 0, as Kafka's broker gives one whatever id and epoch a v3 request
 * carries (a producer that lost its state starts afresh; the partitions accept a producer they do
 * not know at any sequence). A current id without an epoch, or an epoch without an id, and an empty
 * transactional id are INVALID_REQUEST. A transactional id is COORDINATOR_NOT_AVAILABLE:
 * transactions are not served (FindCoordinator answers so too). A failed commit of a block of ids
 * is COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
 */
export const initProducerIdApi: KafkaApi = {
  apiKey: apiKey.initProducerId,
  name: "init_producer_id",
  minVersion: initProducerIdVersionMin,
  maxVersion: initProducerIdVersionMax,
  async handle(header, body, serving) {
    const request = readInitProducerIdRequest(header.apiVersion, body);
    const response = await answer(request, serving);
    return {
      pieces: [encodeInitProducerIdResponse(header, response)],
      errorCount: response.errorCode === kafkaErrorCode.none ? 0 : 1,
    };
  },
};

function refused(errorCode: number): InitProducerIdResponse {
  return { errorCode, producerId: -1, producerEpoch: -1 };
}

async function answer(
  request: InitProducerIdRequest,
  serving: KafkaServing,
): Promise<InitProducerIdResponse> {
  if ((request.producerId === -1) !== (request.producerEpoch === -1) || request.transactionalId === "") {
    return refused(kafkaErrorCode.invalidRequest);
  }
  if (request.transactionalId !== null || serving.producerIds === null) {
    return refused(kafkaErrorCode.coordinatorNotAvailable);
  }
  try {
    return { errorCode: kafkaErrorCode.none, producerId: await serving.producerIds.next(), producerEpoch: 0 };
  } catch (error) {
    rethrowBug(error, serving.logger, "giving a producer id threw; the request stops");
    serving.logger.warn("Cannot give a producer id: the metadata commit failed", { error });
    return refused(kafkaErrorCode.coordinatorLoadInProgress);
  }
}
