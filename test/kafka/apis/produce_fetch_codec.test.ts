import t from "tap";
import { encodeFetchResponse, readFetchRequest } from "../../../src/kafka/apis/fetch_codec.ts";
import {
  encodeListOffsetsResponse,
  readListOffsetsRequest,
} from "../../../src/kafka/apis/list_offsets_codec.ts";
import { encodeProduceResponse, readProduceRequest } from "../../../src/kafka/apis/produce_codec.ts";
import { KafkaReader } from "../../../src/kafka/wire/kafka_codec.ts";
import { apiKey, readRequestHeader } from "../../../src/kafka/wire/frame_codec.ts";
import { kafkaRequest } from "../../helpers/kafka/kafka_wire.ts";

const header = (api: number, version: number) => ({
  apiKey: api,
  apiVersion: version,
  correlationId: 9,
  clientId: "c",
});
const bodyOf = (frame: Uint8Array) => readRequestHeader(frame.subarray(4)).body;
const joined = (pieces: Uint8Array[]) => {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

t.test("a Produce v3 and v7 request reads; records are views into the frame", (t) => {
  const records = new Uint8Array([1, 2, 3, 4, 5]);
  for (const version of [3, 7]) {
    const frame = kafkaRequest(apiKey.produce, version, 1, (w) => {
      w.nullableString(null).int16(-1).int32(1500);
      w.array([0], (x) => {
        x.nullableString("orders");
        x.array(
          [[2, records], [5, null]] as const,
          (p, [index, bytes]) => p.int32(index).nullableBytes(bytes),
        );
      });
    });
    const request = readProduceRequest(version, bodyOf(frame));
    t.equal(request.acks, -1);
    t.equal(request.timeoutMs, 1500);
    t.equal(request.topics[0]!.name, "orders");
    t.same(request.topics[0]!.partitions.map((p) => p.index), [2, 5]);
    t.same([...request.topics[0]!.partitions[0]!.records!], [1, 2, 3, 4, 5]);
    t.equal(request.topics[0]!.partitions[0]!.records!.buffer, frame.buffer, "no copy");
    t.equal(request.topics[0]!.partitions[1]!.records, null);
  }
  t.end();
});

t.test("a Produce response carries the fields of its version", (t) => {
  const partitions = [{ index: 2, errorCode: 0, baseOffset: 42, logAppendTimeMs: -1, logStartOffset: 7 }];
  for (const [version, bytes] of [[1, 4 + 2 + 8 + 4], [2, 4 + 2 + 8 + 8 + 4], [5, 4 + 2 + 8 + 8 + 8 + 4]]) {
    const r = new KafkaReader(
      encodeProduceResponse(header(apiKey.produce, version!), [{ name: "t", partitions }]),
    );
    t.equal(r.int32(), 9, "correlation id");
    t.equal(r.int32(), 1);
    t.equal(r.string(), "t");
    t.equal(r.int32(), 1);
    t.equal(r.remaining, bytes, `v${version}: ${bytes} bytes per partition and the throttle time`);
    t.equal(r.int32(), 2);
    t.equal(r.int16(), 0);
    t.equal(r.int64(), 42);
  }
  t.end();
});

t.test("a Fetch v11 request reads, and its response splices record pieces uncopied", (t) => {
  const frame = kafkaRequest(apiKey.fetch, 11, 1, (w) => {
    w.int32(-1).int32(500).int32(1).int32(1 << 20).int8(0).int32(0).int32(-1);
    w.array([0], (x) => {
      x.nullableString("orders");
      x.array([0], (p) => p.int32(3).int32(-1).int64(100).int64(-1).int32(65536));
    });
    w.int32(0).nullableString("rack-a");
  });
  const request = readFetchRequest(11, bodyOf(frame));
  t.same(request, {
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{
      name: "orders",
      partitions: [{ partition: 3, currentLeaderEpoch: -1, fetchOffset: 100, partitionMaxBytes: 65536 }],
    }],
  });
  const batchA = new Uint8Array(70).fill(1);
  const batchB = new Uint8Array(30).fill(2);
  const pieces = encodeFetchResponse(header(apiKey.fetch, 11), [{
    name: "orders",
    partitions: [
      {
        partition: 3,
        errorCode: 0,
        highWatermark: 200,
        lastStableOffset: 180,
        logStartOffset: 0,
        abortedTransactions: [{ producerId: 7, firstOffset: 120 }, { producerId: 9, firstOffset: 150 }],
        records: [batchA, batchB],
      },
      {
        partition: 4,
        errorCode: 1,
        highWatermark: 5,
        lastStableOffset: 5,
        logStartOffset: 0,
        abortedTransactions: null,
        records: [],
      },
    ],
  }]);
  t.ok(pieces.includes(batchA) && pieces.includes(batchB), "the record pieces are the ones given");
  const r = new KafkaReader(joined(pieces));
  t.equal(r.int32(), 9);
  t.equal(r.int32(), 0, "throttle");
  t.equal(r.int16(), 0, "error");
  t.equal(r.int32(), 0, "sessionless");
  t.equal(r.int32(), 1);
  t.equal(r.string(), "orders");
  t.equal(r.int32(), 2);
  t.same([r.int32(), r.int16(), r.int64(), r.int64(), r.int64()], [3, 0, 200, 180, 0]);
  t.same(r.array((a) => [a.int64(), a.int64()]), [[7, 120], [9, 150]], "the aborted transactions, in order");
  t.equal(r.int32(), -1, "no preferred read replica");
  const records = r.nullableBytes()!;
  t.equal(records.length, 100);
  t.same([records[0], records[69], records[70], records[99]], [1, 1, 2, 2]);
  t.same([r.int32(), r.int16(), r.int64(), r.int64(), r.int64(), r.int32(), r.int32()], [
    4,
    1,
    5,
    5,
    0,
    -1,
    -1,
  ]);
  t.equal(r.nullableBytes()!.length, 0);
  t.equal(r.remaining, 0);
  t.end();
});

t.test("ListOffsets v1 and v5 read and answer", (t) => {
  for (const version of [1, 5]) {
    const frame = kafkaRequest(apiKey.listOffsets, version, 1, (w) => {
      w.int32(-1);
      if (version >= 2) w.int8(0);
      w.array([0], (x) => {
        x.nullableString("orders");
        x.array([-2, -1, 1_700_000_000_000], (p, ts) => {
          p.int32(0);
          if (version >= 4) p.int32(-1);
          p.int64(ts);
        });
      });
    });
    const request = readListOffsetsRequest(version, bodyOf(frame));
    t.same(request.topics[0]!.partitions.map((p) => p.timestampMs), [-2, -1, 1_700_000_000_000]);
    const r = new KafkaReader(encodeListOffsetsResponse(header(apiKey.listOffsets, version), [{
      name: "orders",
      partitions: [{ partition: 0, errorCode: 0, timestampMs: -1, offset: 12 }],
    }]));
    r.int32();
    if (version >= 2) t.equal(r.int32(), 0, "throttle");
    t.equal(r.int32(), 1);
    t.equal(r.string(), "orders");
    t.equal(r.int32(), 1);
    t.same([r.int32(), r.int16(), r.int64(), r.int64()], [0, 0, -1, 12]);
    if (version >= 4) t.equal(r.int32(), 0, "leader epoch");
    t.equal(r.remaining, 0);
  }
  t.end();
});
