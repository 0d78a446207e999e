import type { BatchReadResult } from "../../log/read/segment_reads.ts";
import type { KafkaApi, KafkaServing } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import {
  encodeFetchResponse,
  type FetchPartitionRequest,
  type FetchPartitionResponse,
  type FetchRequest,
  type FetchTopicResponse,
  fetchVersionMax,
  fetchVersionMin,
  readFetchRequest,
} from "./fetch_codec.ts";
import { NotLeaderError, ResourceNotFoundError, UnavailableError } from "../../broker/broker_errors.ts";
import { apiKey } from "../wire/frame_codec.ts";

/** Reads of one fetch, at most, while it waits for `min_bytes`: each after an append woke it. */
export const fetchRoundsMax = 16;

/** Fetch's isolation level 1: records of transactions not yet committed, and of aborted ones, are not for the consumer. */
const readCommitted = 1;

/** Longest wait a fetch honours, whatever its `max_wait_ms`. */
export const fetchWaitMsMax = 30_000;

/**
 * Fetch 4 to 11: each partition's batches from the one holding its offset, as stored (local
 * segments or the chunk cache), within its `partition_max_bytes` and the response's `max_bytes`
 * (the first batch always goes). With fewer than `min_bytes`, the fetch waits for an append to one
 * of its partitions, for at most `max_wait_ms`, and reads again. An offset outside the log answers
 * OFFSET_OUT_OF_RANGE; a remote read still under way after `fetch_timeout` answers no records and no
 * error (the client asks again and finds the cache warm); missing or corrupt remote data answers
 * KAFKA_STORAGE_ERROR, never wrong or missing records. A read_committed fetch (isolation level 1)
 * reads below the last stable offset only, and lists the aborted transactions among its records,
 * which the consumer drops; control batches go out as stored, and consumers skip them.
 */
export const fetchApi: KafkaApi = {
  apiKey: apiKey.fetch,
  name: "fetch",
  minVersion: fetchVersionMin,
  maxVersion: fetchVersionMax,
  async handle(header, body, serving) {
    const request = readFetchRequest(header.apiVersion, body);
    const deadlineMs = serving.clock.nowMs() + Math.min(Math.max(request.maxWaitMs, 0), fetchWaitMsMax);
    let answer = await readAll(request, serving);
    for (let round = 1; round < fetchRoundsMax && !enough(answer, request, deadlineMs, serving); round++) {
      answer.release();
      await waitForAnyAppend(request, deadlineMs - serving.clock.nowMs(), serving);
      answer = await readAll(request, serving);
    }
    const errorCount = answer.topics.reduce(
      (n, t) => n + t.partitions.filter((p) => p.errorCode !== 0).length,
      0,
    );
    return { pieces: encodeFetchResponse(header, answer.topics), errorCount, release: answer.release };
  },
};

interface FetchAnswer {
  topics: FetchTopicResponse[];
  sizeBytes: number;
  /** A partition answered with an error: the fetch answers at once. */
  failed: boolean;
  release(): void;
}

function enough(
  answer: FetchAnswer,
  request: FetchRequest,
  deadlineMs: number,
  serving: KafkaServing,
): boolean {
  return answer.failed || answer.sizeBytes >= request.minBytes || serving.clock.nowMs() >= deadlineMs;
}

/** Every partition of the request, in its order, sharing the response's byte budget. */
async function readAll(request: FetchRequest, serving: KafkaServing): Promise<FetchAnswer> {
  const reads: BatchReadResult[] = [];
  let sizeBytes = 0;
  let failed = false;
  const topics: FetchTopicResponse[] = [];
  for (const topic of request.topics) {
    const partitions: FetchPartitionResponse[] = [];
    for (const p of topic.partitions) {
      const budget = Math.min(p.partitionMaxBytes, request.maxBytes - sizeBytes);
      const committed = request.isolationLevel === readCommitted;
      const { response, read } = await readPartition(
        topic.name,
        p,
        budget,
        sizeBytes === 0,
        serving,
        committed,
      );
      if (read !== null) {
        reads.push(read);
        sizeBytes += read.sizeBytes;
      }
      failed ||= response.errorCode !== kafkaErrorCode.none;
      partitions.push(response);
    }
    topics.push({ name: topic.name, partitions });
  }
  return { topics, sizeBytes, failed, release: () => reads.forEach((r) => r.release()) };
}

/** Where a partition stands for a fetch: its log start, high watermark, last stable offset and end. */
interface FetchRange {
  start: number;
  next: number;
  stable: number;
  end: number;
}

async function readPartition(
  topic: string,
  p: FetchPartitionRequest,
  budgetBytes: number,
  first: boolean,
  serving: KafkaServing,
  committed: boolean,
): Promise<{ response: FetchPartitionResponse; read: BatchReadResult | null }> {
  let range: FetchRange = { start: -1, next: -1, stable: -1, end: -1 };
  const answer = (errorCode: number, records: Uint8Array[] = [], aborted: FetchAborted = []) => ({
    partition: p.partition,
    errorCode,
    highWatermark: range.next,
    lastStableOffset: range.stable,
    logStartOffset: range.start,
    abortedTransactions: committed ? aborted : null,
    records,
  });
  if (!serving.catalog.has(topic)) {
    return { response: answer(kafkaErrorCode.unknownTopicOrPartition), read: null };
  }
  const stream = serving.catalog.streamName;
  try {
    range = {
      ...serving.data.offsetRange(stream, topic, p.partition),
      stable: serving.data.lastStableOffset(stream, topic, p.partition),
    };
    const { start, end } = range;
    // A read_committed consumer reads below the last stable offset only.
    const limit = committed ? range.stable : range.next;
    // Past the limit but within the log (a new leader whose followers have not fetched yet, an open
    // transaction): no records yet, not out of range.
    if (p.fetchOffset < start || p.fetchOffset > end) {
      return { response: answer(kafkaErrorCode.offsetOutOfRange), read: null };
    }
    // Past the response's budget only the first partition with data still gets its first batch.
    if (p.fetchOffset >= limit || (budgetBytes <= 0 && !first)) {
      return { response: answer(kafkaErrorCode.none), read: null };
    }
    const read = await serving.data.fetchBatches(
      stream,
      topic,
      p.partition,
      p.fetchOffset,
      Math.max(budgetBytes, 1),
      limit,
    );
    if (!first && read.sizeBytes > budgetBytes) {
      read.release();
      return { response: answer(kafkaErrorCode.none), read: null };
    }
    const aborted = committed && read.batches.length > 0
      ? await serving.data.abortedTxns(stream, topic, p.partition, p.fetchOffset, read.nextOffset)
      : [];
    return { response: answer(kafkaErrorCode.none, read.batches, aborted), read };
  } catch (error) {
    // A remote read that waited `fetch_timeout`, or a full queue: no records and no error, so that
    // the client fetches again (the fill goes on).
    if (
      error instanceof UnavailableError && (error.reason === "transient" || error.reason === "overloaded")
    ) {
      return { response: answer(kafkaErrorCode.none), read: null };
    }
    range = { start: -1, next: -1, stable: -1, end: -1 };
    return {
      response: answer(kafkaErrorOf(error, serving.logger, `fetch ${topic}/${p.partition}`)),
      read: null,
    };
  }
}

type FetchAborted = readonly { producerId: number; firstOffset: number }[];

/** Resolves once any partition of the request has a new append, or after `waitMs`. */
async function waitForAnyAppend(request: FetchRequest, waitMs: number, serving: KafkaServing): Promise<void> {
  if (waitMs <= 0) return;
  const stream = serving.catalog.streamName;
  const waits: Promise<void>[] = [];
  for (const topic of request.topics) {
    if (!serving.catalog.has(topic.name)) continue;
    for (const p of topic.partitions) {
      try {
        // Past what the partition holds now: what it holds already was too little.
        const { next } = serving.data.offsetRange(stream, topic.name, p.partition);
        waits.push(serving.data.waitForAppend(stream, topic.name, p.partition, next, waitMs));
      } catch (error) {
        // A partition that cannot be found, or is not led here, answers its error at the next read.
        if (!(error instanceof ResourceNotFoundError || error instanceof NotLeaderError)) throw error;
      }
    }
  }
  if (waits.length === 0) waits.push(serving.clock.sleep(waitMs));
  await Promise.race(waits);
}
