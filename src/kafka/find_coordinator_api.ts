import type { KafkaApi } from "./kafka_api.ts";
import { kafkaErrorCode } from "./kafka_error_code.ts";
import { KafkaDecodeError } from "./kafka_reader.ts";
import { KafkaWriter } from "./kafka_writer.ts";
import { apiKey, writeResponseHeader } from "./request_header.ts";

/** Key types of FindCoordinator: a consumer group's or a transactional producer's. */
const groupKeyType = 0;

/**
 * FindCoordinator 0 to 2: on one node, the coordinator of every consumer group is this broker; of
 * a transactional id there is none (transactions are not served), answered COORDINATOR_NOT_AVAILABLE.
 * librdkafka also reads the API's presence as the sign that a broker takes LZ4 batches.
 */
export const findCoordinatorApi: KafkaApi = {
  apiKey: apiKey.findCoordinator,
  name: "find_coordinator",
  minVersion: 0,
  maxVersion: 2,
  handle(header, body, serving) {
    const version = header.apiVersion;
    if (version > 2) throw new KafkaDecodeError(`FindCoordinator v${version} is not read here`);
    body.string();
    const keyType = version >= 1 ? body.int8() : groupKeyType;
    const served = keyType === groupKeyType;
    const { broker } = serving;
    const writer = new KafkaWriter(1024);
    writeResponseHeader(writer, { ...header, apiKey: apiKey.findCoordinator });
    if (version >= 1) writer.int32(0);
    writer.int16(served ? kafkaErrorCode.none : kafkaErrorCode.coordinatorNotAvailable);
    if (version >= 1) writer.nullableString(served ? null : "transactions are not served");
    writer.int32(served ? broker.nodeId : -1).nullableString(served ? broker.host : "").int32(
      served ? broker.port : -1,
    );
    return Promise.resolve({ pieces: [writer.bytes()], errorCount: served ? 0 : 1 });
  },
};
