import t from "tap";
import { KafkaReader } from "../../../src/kafka/wire/kafka_codec.ts";
import {
  encodeReplicaFetchRequest,
  encodeReplicaFetchResponse,
  readReplicaFetchRequest,
  readReplicaFetchResponse,
  replicaFetchApiKey,
} from "../../../src/kafka/replica/replica_fetch_codec.ts";
import { readRequestHeader } from "../../../src/kafka/wire/frame_codec.ts";

const concat = (pieces: Uint8Array[]) => new Uint8Array(Buffer.concat(pieces));

t.test("a replica fetch request and its answer survive the wire", (t) => {
  const request = {
    replicaId: 2,
    token: "t0ken",
    maxWaitMs: 500,
    maxBytes: 1 << 20,
    partitions: [
      {
        address: { streamId: 1, topicId: 4, partitionId: 0 },
        leaderEpoch: 3,
        fetchOffset: 77,
        lastFetchedEpoch: 2,
      },
      {
        address: { streamId: 1, topicId: 4, partitionId: 1 },
        leaderEpoch: 0,
        fetchOffset: 0,
        lastFetchedEpoch: -1,
      },
    ],
  };
  const frame = encodeReplicaFetchRequest(9, request);
  t.equal(new DataView(frame.buffer, frame.byteOffset).getInt32(0), frame.length - 4, "the size field");
  const { header, body } = readRequestHeader(frame.subarray(4));
  t.equal(header.apiKey, replicaFetchApiKey);
  t.equal(header.correlationId, 9);
  t.same(readReplicaFetchRequest(body), request);

  const records = new Uint8Array([1, 2, 3, 4, 5]);
  const response = {
    error: "none" as const,
    partitions: [
      {
        address: request.partitions[0]!.address,
        error: "none" as const,
        highWatermark: 70,
        logStartOffset: 0,
        logEndOffset: 80,
        segmentStarts: [78],
        records: [records],
        divergingEpoch: null,
      },
      {
        address: request.partitions[1]!.address,
        error: "fencedEpoch" as const,
        highWatermark: -1,
        logStartOffset: -1,
        logEndOffset: -1,
        segmentStarts: [],
        records: [],
        divergingEpoch: { epoch: 1, endOffset: 12 },
      },
    ],
  };
  const pieces = encodeReplicaFetchResponse({ ...header }, response);
  const read = readReplicaFetchResponse(concat(pieces));
  t.equal(read.correlationId, 9);
  t.same(read.response, response);
  t.end();
});

t.test("a truncated answer is refused, not misread", (t) => {
  const pieces = encodeReplicaFetchResponse(
    { apiKey: replicaFetchApiKey, apiVersion: 0, correlationId: 1, clientId: null },
    { error: "none", partitions: [] },
  );
  const whole = concat(pieces);
  t.throws(() => readReplicaFetchResponse(whole.subarray(0, whole.length - 1)));
  t.throws(() => readReplicaFetchRequest(new KafkaReader(new Uint8Array([0, 0, 0, 0]))));
  t.end();
});
