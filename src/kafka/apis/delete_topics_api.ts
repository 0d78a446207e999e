import { ResourceNotFoundError } from "../../broker/broker_errors.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import { KafkaDecodeError, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, writeResponseHeader } from "../wire/frame_codec.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";

/**
 * DeleteTopics 1 to 4 (4 is flexible: compact strings and tagged fields): each topic by name,
 * deleted as the HTTP API deletes one (metadata first, then its directories; its objects are left
 * to housekeeping's orphan sweep); one that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION.
 */
export const deleteTopicsApi: KafkaApi = {
  apiKey: apiKey.deleteTopics,
  name: "delete_topics",
  minVersion: 1,
  maxVersion: 4,
  async handle(header, body, serving) {
    const version = header.apiVersion;
    if (version < 1 || version > 4) throw new KafkaDecodeError(`DeleteTopics v${version} is not read here`);
    const flexible = version >= 4;
    const names = flexible
      ? body.compactArray((r) => r.compactString(), 1)
      : body.array((r) => r.string(), 2);
    body.int32();
    if (flexible) body.skipTaggedFields();
    const results: { name: string; errorCode: number }[] = [];
    for (const name of names) results.push({ name, errorCode: await deleteOne(name, serving) });
    const writer = new KafkaWriter(64 + results.reduce((n, r) => n + 8 + 3 * r.name.length, 0));
    writeResponseHeader(writer, header);
    writer.int32(0);
    const result = (w: KafkaWriter, r: { name: string; errorCode: number }) => {
      if (flexible) w.compactNullableString(r.name).int16(r.errorCode).emptyTaggedFields();
      else w.nullableString(r.name).int16(r.errorCode);
    };
    if (flexible) writer.compactArray(results, result).emptyTaggedFields();
    else writer.array(results, result);
    return { pieces: [writer.bytes()], errorCount: results.filter((r) => r.errorCode !== 0).length };
  },
};

async function deleteOne(name: string, serving: KafkaServing): Promise<number> {
  if (!serving.catalog.has(name)) return kafkaErrorCode.unknownTopicOrPartition;
  // The consumer groups' committed offsets live in it.
  if (name === offsetsTopicName) return kafkaErrorCode.invalidTopicException;
  try {
    await serving.catalog.deleteTopic(name);
    return kafkaErrorCode.none;
  } catch (error) {
    if (error instanceof ResourceNotFoundError) return kafkaErrorCode.unknownTopicOrPartition;
    return kafkaErrorOf(error, serving.logger, `delete topic ${name}`);
  }
}
