import { KafkaDecodeError, type KafkaReader, KafkaWriter } from "../wire/kafka_codec.ts";
import { apiKey, type RequestHeader, writeResponseHeader } from "../wire/frame_codec.ts";

/**
 * DescribeTransactions (key 65) and ListTransactions (key 66), version 0 of each, flexible: an
 * operator's view of the transactions a coordinator holds (Kafka's `kafka-transactions.sh`).
 */

export const txnViewsVersion = 0;

/** One transactional id as DescribeTransactions answers it. */
export interface DescribedTransaction {
  errorCode: number;
  transactionalId: string;
  /** Kafka's state name: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort. */
  state: string;
  timeoutMs: number;
  /** -1 outside a transaction. */
  startTimeMs: number;
  producerId: number;
  producerEpoch: number;
  topics: { name: string; partitions: number[] }[];
}

export interface ListTransactionsRequest {
  stateFilters: string[];
  producerIdFilters: number[];
}

export interface ListedTransaction {
  transactionalId: string;
  producerId: number;
  state: string;
}

export interface ListTransactionsResponse {
  errorCode: number;
  unknownStateFilters: string[];
  transactions: ListedTransaction[];
}

function checkVersion(name: string, version: number): void {
  if (version !== txnViewsVersion) throw new KafkaDecodeError(`${name} v${version} is not read here`);
}

/** Reads a DescribeTransactions request: the transactional ids asked about. */
export function readDescribeTransactionsRequest(version: number, body: KafkaReader): string[] {
  checkVersion("DescribeTransactions", version);
  const ids = body.compactArray((r) => r.compactString(), 1);
  body.skipTaggedFields();
  return ids;
}

export function encodeDescribeTransactionsResponse(
  header: RequestHeader,
  transactions: readonly DescribedTransaction[],
): Uint8Array {
  const writer = new KafkaWriter(64 * 1024 * 1024, 256);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.describeTransactions });
  writer.int32(0);
  writer.compactArray(transactions, (w, d) => {
    w.int16(d.errorCode).compactNullableString(d.transactionalId).compactNullableString(d.state);
    w.int32(d.timeoutMs).int64(d.startTimeMs).int64(d.producerId).int32(d.producerEpoch);
    w.compactArray(d.topics, (tw, topic) => {
      tw.compactNullableString(topic.name).compactArray(topic.partitions, (pw, p) => pw.int32(p))
        .emptyTaggedFields();
    });
    w.emptyTaggedFields();
  });
  writer.emptyTaggedFields();
  return writer.bytes();
}

/** Reads a ListTransactions request: its state and producer id filters (empty: none). */
export function readListTransactionsRequest(version: number, body: KafkaReader): ListTransactionsRequest {
  checkVersion("ListTransactions", version);
  const stateFilters = body.compactArray((r) => r.compactString(), 1);
  const producerIdFilters = body.compactArray((r) => r.int64(), 8);
  body.skipTaggedFields();
  return { stateFilters, producerIdFilters };
}

export function encodeListTransactionsResponse(
  header: RequestHeader,
  response: ListTransactionsResponse,
): Uint8Array {
  const writer = new KafkaWriter(64 * 1024 * 1024, 256);
  writeResponseHeader(writer, { ...header, apiKey: apiKey.listTransactions });
  writer.int32(0).int16(response.errorCode);
  writer.compactArray(response.unknownStateFilters, (w, f) => w.compactNullableString(f));
  writer.compactArray(response.transactions, (w, l) => {
    w.compactNullableString(l.transactionalId).int64(l.producerId).compactNullableString(l.state)
      .emptyTaggedFields();
  });
  writer.emptyTaggedFields();
  return writer.bytes();
}
