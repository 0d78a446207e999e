import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import {
  earliestTimestamp,
  encodeListOffsetsResponse,
  latestTimestamp,
  type ListOffsetsPartitionResponse,
  listOffsetsVersionMax,
  listOffsetsVersionMin,
  readListOffsetsRequest,
} from "./list_offsets_codec.ts";
import { apiKey } from "../wire/frame_codec.ts";

/**
 * ListOffsets 1 to 5: the earliest offset (-2: the log start, remote segments included), the
 * latest (-1: the next offset to be written), or the first offset whose record is stamped at or
 * after a time, searched across remote and local segments (in a compressed batch, the batch's
 * first offset); -1 when no record is that late. For read_committed (isolation level 1) the latest
 * is the last stable offset, and a time's offset must lie below it.
 */
export const listOffsetsApi: KafkaApi = {
  apiKey: apiKey.listOffsets,
  name: "list_offsets",
  minVersion: listOffsetsVersionMin,
  maxVersion: listOffsetsVersionMax,
  async handle(header, body, serving) {
    const request = readListOffsetsRequest(header.apiVersion, body);
    const topics = await Promise.all(request.topics.map(async (topic) => ({
      name: topic.name,
      partitions: await Promise.all(
        topic.partitions.map((p) =>
          lookUp(topic.name, p.partition, p.timestampMs, request.isolationLevel === 1, serving)
        ),
      ),
    })));
    const errorCount = topics.reduce((n, t) => n + t.partitions.filter((p) => p.errorCode !== 0).length, 0);
    return { pieces: [encodeListOffsetsResponse(header, topics)], errorCount };
  },
};

async function lookUp(
  topic: string,
  partition: number,
  timestampMs: number,
  committed: boolean,
  serving: KafkaServing,
): Promise<ListOffsetsPartitionResponse> {
  const found = (offset: number, errorCode: number = kafkaErrorCode.none) => ({
    partition,
    errorCode,
    timestampMs: -1,
    offset,
  });
  if (!serving.catalog.has(topic)) return found(-1, kafkaErrorCode.unknownTopicOrPartition);
  const stream = serving.catalog.streamName;
  try {
    const range = serving.data.offsetRange(stream, topic, partition);
    const start = range.start;
    // What a consumer of the isolation level can fetch up to: the last stable offset for read_committed.
    const next = committed ? serving.data.lastStableOffset(stream, topic, partition) : range.next;
    if (timestampMs === earliestTimestamp) return found(start);
    if (timestampMs === latestTimestamp) return found(next);
    if (timestampMs < 0) return found(-1, kafkaErrorCode.invalidRequest);
    const offset = await serving.data.offsetForTimestamp(stream, topic, partition, timestampMs * 1000);
    return offset >= next ? found(-1) : { ...found(offset), timestampMs };
  } catch (error) {
    return found(-1, kafkaErrorOf(error, serving.logger, `list offsets of ${topic}/${partition}`));
  }
}
