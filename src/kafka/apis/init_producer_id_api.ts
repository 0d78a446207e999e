import { rethrowBug } from "../../runtime/assert.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode } from "../kafka_errors.ts";
import { apiKey } from "../wire/frame_codec.ts";
import { txnErrorCode } from "../txn/txn_error_codes.ts";
import {
  encodeInitProducerIdResponse,
  type InitProducerIdRequest,
  type InitProducerIdResponse,
  initProducerIdVersionMax,
  initProducerIdVersionMin,
  readInitProducerIdRequest,
} from "./init_producer_id_codec.ts";

/**
 * InitProducerId 0 to 4. For an idempotent producer: a new producer id, unique in the cluster
 * (`ProducerIds`), at epoch 0, as Kafka's broker gives one whatever id and epoch a v3 request
 * carries (a producer that lost its state starts afresh; the partitions accept a producer they do
 * not know at any sequence); a failed commit of a block of ids is COORDINATOR_LOAD_IN_PROGRESS,
 * which clients retry. For a transactional id: the transaction coordinator's answer
 * (`TxnCoordinator.init`: the id's producer id at its next epoch, fencing an older producer), with
 * PRODUCER_FENCED as INVALID_PRODUCER_EPOCH before version 4. A current id without an epoch, or an
 * epoch without an id, and an empty transactional id are INVALID_REQUEST.
 */
export const initProducerIdApi: KafkaApi = {
  apiKey: apiKey.initProducerId,
  name: "init_producer_id",
  minVersion: initProducerIdVersionMin,
  maxVersion: initProducerIdVersionMax,
  async handle(header, body, serving) {
    const request = readInitProducerIdRequest(header.apiVersion, body);
    const response = await answer(request, serving, header.apiVersion);
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
  version: number,
): Promise<InitProducerIdResponse> {
  if ((request.producerId === -1) !== (request.producerEpoch === -1) || request.transactionalId === "") {
    return refused(kafkaErrorCode.invalidRequest);
  }
  if (request.transactionalId !== null) {
    return await transactional(request, request.transactionalId, serving, version);
  }
  if (serving.producerIds === null) return refused(kafkaErrorCode.coordinatorNotAvailable);
  try {
    return { errorCode: kafkaErrorCode.none, producerId: await serving.producerIds.next(), producerEpoch: 0 };
  } catch (error) {
    rethrowBug(error, serving.logger, "giving a producer id threw; the request stops");
    serving.logger.warn("Cannot give a producer id: the metadata commit failed", { error });
    return refused(kafkaErrorCode.coordinatorLoadInProgress);
  }
}

async function transactional(
  request: InitProducerIdRequest,
  transactionalId: string,
  serving: KafkaServing,
  version: number,
): Promise<InitProducerIdResponse> {
  if (serving.transactions === null) return refused(kafkaErrorCode.coordinatorNotAvailable);
  const expected = request.producerId === -1
    ? null
    : { producerId: request.producerId, epoch: request.producerEpoch };
  const answer = await serving.transactions.init({
    transactionalId,
    timeoutMs: request.transactionTimeoutMs,
    expected,
  });
  return {
    errorCode: txnErrorCode(answer.error, apiKey.initProducerId, version),
    producerId: answer.producerId,
    producerEpoch: answer.epoch,
  };
}
