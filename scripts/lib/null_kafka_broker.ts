import { parseArgs } from "node:util";
import { encodeApiVersionsResponse } from "../../src/kafka/apis/api_versions_codec.ts";
import {
  encodeFetchResponse,
  type FetchPartitionResponse,
  readFetchRequest,
} from "../../src/kafka/apis/fetch_codec.ts";
import { serveConnection } from "../../src/kafka/kafka_connection.ts";
import type { KafkaResponse, KafkaSession } from "../../src/kafka/kafka_session.ts";
import { encodeMetadataResponse, readMetadataRequest } from "../../src/kafka/apis/metadata_codec.ts";
import { encodeProduceResponse, readProduceRequest } from "../../src/kafka/apis/produce_codec.ts";
import { apiKey, readRequestHeader, type RequestHeader } from "../../src/kafka/wire/frame_codec.ts";
import { batchField, setBaseOffset } from "../../src/log/batch/record_batch.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { PieceGate } from "../../src/runtime/cooperation/piece_gate.ts";
import { RealClock } from "../../src/runtime/clock/real_clock.ts";

/**
 * The null broker of bench:kafka: a Kafka listener that answers without storing, on the same frame,
 * connection and codec code as Strata's, so that it measures the protocol's ceiling on the
 * machine it runs on. It serves ApiVersions, Metadata (one topic), Produce (offsets counted, bytes dropped after
 * the first batch of each partition, kept as a template) and Fetch (copies of the template batch
 * with their base offsets set, up to what was produced).
 *
 *   deno run -A scripts/lib/null_kafka_broker.ts --topic NAME --partitions N
 *
 * Prints `null broker listening on 127.0.0.1:PORT` once it accepts connections.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: { topic: { type: "string", default: "bench" }, partitions: { type: "string", default: "4" } },
});
const topic = args.topic!;
const partitions = Number(args.partitions);
const nextOffsets = Array.from({ length: partitions }, () => 0);
const templates: (Uint8Array | null)[] = Array.from({ length: partitions }, () => null);

const ranges = [
  { apiKey: apiKey.produce, minVersion: 0, maxVersion: 7 },
  { apiKey: apiKey.fetch, minVersion: 4, maxVersion: 11 },
  { apiKey: apiKey.metadata, minVersion: 0, maxVersion: 8 },
  { apiKey: apiKey.apiVersions, minVersion: 0, maxVersion: 3 },
];

function metadata(header: RequestHeader, body: ReturnType<typeof readRequestHeader>["body"], port: number) {
  readMetadataRequest(header.apiVersion, body);
  return encodeMetadataResponse(header, {
    brokers: [{ nodeId: 1, host: "127.0.0.1", port, rack: null }],
    clusterId: "null",
    controllerId: 1,
    topics: [{
      errorCode: 0,
      name: topic,
      isInternal: false,
      partitions: Array.from({ length: partitions }, (_, i) => ({
        errorCode: 0,
        partitionIndex: i,
        leaderId: 1,
        leaderEpoch: 0,
        replicaNodes: [1],
        isrNodes: [1],
        offlineReplicas: [],
      })),
    }],
  }, 1 << 20);
}

function produce(
  header: RequestHeader,
  body: ReturnType<typeof readRequestHeader>["body"],
): KafkaResponse | null {
  const request = readProduceRequest(header.apiVersion, body);
  const topics = request.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p) => {
      const records = p.records!;
      const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
      let count = 0;
      for (let at = 0; at < records.length; at += view.getInt32(at + batchField.batchLength) + 12) {
        count += view.getInt32(at + batchField.recordCount);
        templates[p.index] ??= records.slice(at, at + view.getInt32(at + batchField.batchLength) + 12);
      }
      const baseOffset = nextOffsets[p.index]!;
      nextOffsets[p.index]! += count;
      return { index: p.index, errorCode: 0, baseOffset, logAppendTimeMs: -1, logStartOffset: 0 };
    }),
  }));
  return request.acks === 0 ? null : { pieces: [encodeProduceResponse(header, topics)] };
}

function fetch(header: RequestHeader, body: ReturnType<typeof readRequestHeader>["body"]): KafkaResponse {
  const request = readFetchRequest(header.apiVersion, body);
  const topics = request.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p): FetchPartitionResponse => {
      const template = templates[p.partition] ?? null;
      const next = nextOffsets[p.partition]!;
      const records: Uint8Array[] = [];
      if (template !== null) {
        const perBatch = new DataView(template.buffer).getInt32(batchField.recordCount);
        let bytes = 0;
        for (let offset = p.fetchOffset; offset < next && bytes + template.length <= p.partitionMaxBytes;) {
          const copy = template.slice();
          setBaseOffset(copy, offset);
          records.push(copy);
          bytes += copy.length;
          offset += perBatch;
        }
      }
      return {
        partition: p.partition,
        errorCode: 0,
        highWatermark: next,
        lastStableOffset: next,
        logStartOffset: 0,
        abortedTransactions: null,
        records,
      };
    }),
  }));
  return { pieces: encodeFetchResponse(header, topics) };
}

const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const port = (listener.addr as Deno.NetAddr).port;
console.log(`null broker listening on 127.0.0.1:${port}`);

class NullSession implements KafkaSession {
  handle(frame: Uint8Array): Promise<KafkaResponse | null> {
    const { header, body } = readRequestHeader(frame);
    if (header.apiKey === apiKey.apiVersions) {
      return Promise.resolve({ pieces: [encodeApiVersionsResponse(header, ranges)] });
    }
    if (header.apiKey === apiKey.metadata) return Promise.resolve({ pieces: [metadata(header, body, port)] });
    if (header.apiKey === apiKey.produce) return Promise.resolve(produce(header, body));
    if (header.apiKey === apiKey.fetch) return Promise.resolve(fetch(header, body));
    return Promise.reject(new Error(`the null broker does not serve API ${header.apiKey}`));
  }
  closed(): void {}
}

const clock = new RealClock();
const gate = new PieceGate();
for await (const conn of listener) {
  conn.setNoDelay(true);
  void serveConnection(
    {
      remoteAddress: "client",
      read: async () => {
        const buffer = new Uint8Array(64 * 1024);
        try {
          const n = await conn.read(buffer);
          return n === null ? null : buffer.subarray(0, n);
        } catch {
          return null;
        }
      },
      write: async (bytes) => {
        for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
      },
      close: () => {
        try {
          conn.close();
        } catch { /* closed already */ }
      },
    },
    new NullSession(),
    // The listener's own defaults, and the same piece-gate turns as the server's connections take.
    { maxFrameBytes: 100 * 1024 * 1024, requestsInFlightMax: 32, idleTimeoutMs: 600_000 },
    { clock, turn: () => gate.turn(), logger: silentLogger() },
  );
}
