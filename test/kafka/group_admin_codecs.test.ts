import t from "tap";
import {
  encodeDeleteGroupsResponse,
  readDeleteGroupsRequest,
} from "../../src/kafka/groups/delete_groups_codec.ts";
import {
  encodeDescribeGroupsResponse,
  readDescribeGroupsRequest,
} from "../../src/kafka/groups/describe_groups_codec.ts";
import { kafkaErrorCode } from "../../src/kafka/kafka_errors.ts";
import { KafkaDecodeError, KafkaReader, type KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import { encodeListGroupsResponse, readListGroupsRequest } from "../../src/kafka/groups/list_groups_codec.ts";
import {
  encodeOffsetCommitResponse,
  readOffsetCommitRequest,
} from "../../src/kafka/groups/offset_commit_codec.ts";
import {
  encodeOffsetFetchResponse,
  readOffsetFetchRequest,
} from "../../src/kafka/groups/offset_fetch_codec.ts";
import { apiKey } from "../../src/kafka/wire/frame_codec.ts";
import { absent, type CodecCase, requestBody, require, testCases } from "../helpers/codec_cases.ts";

/**
 * The wire codecs of the consumer-group offset and administration APIs (OffsetCommit, OffsetFetch,
 * ListGroups, DescribeGroups, DeleteGroups): every version's request as a client writes it reads
 * back, every version's response reads back field by field, kafkajs's own encoders' requests read
 * and kafkajs's decoders read our responses, and a truncated body, a forbidden null or a version
 * out of range is refused. Also: every error code is the one kafkajs knows by the same name.
 */

const committed = [
  { partitionIndex: 0, committedOffset: 42, committedMetadata: "meta" },
  { partitionIndex: 1, committedOffset: 2 ** 40, committedMetadata: null },
];
const commitErrors = [{ partitionIndex: 0, errorCode: 0 }, { partitionIndex: 1, errorCode: 28 }];

const offsetCommit: CodecCase = {
  name: "OffsetCommit",
  api: apiKey.offsetCommit,
  min: 2,
  max: 7,
  read: readOffsetCommitRequest,
  write(version, w) {
    w.nullableString("orders-app").int32(7).nullableString("member-1");
    if (version >= 7) w.nullableString("instance-1");
    if (version <= 4) w.int64(86_400_000);
    w.array([0], (x) => {
      x.nullableString("orders");
      x.array(committed, (p, c) => {
        p.int32(c.partitionIndex).int64(c.committedOffset);
        if (version >= 6) p.int32(3);
        p.nullableString(c.committedMetadata);
      });
    });
  },
  request: (version) => ({
    groupId: "orders-app",
    generationId: 7,
    memberId: "member-1",
    groupInstanceId: version >= 7 ? "instance-1" : null,
    retentionTimeMs: version <= 4 ? 86_400_000 : -1,
    topics: [{
      name: "orders",
      partitions: committed.map((c) => ({ ...c, committedLeaderEpoch: version >= 6 ? 3 : -1 })),
    }],
  }),
  encode: (h) =>
    encodeOffsetCommitResponse(h, {
      topics: [{ name: "orders", partitions: commitErrors }, { name: "ünicode", partitions: [] }],
    }),
  readResponse: (version, r) => [
    version >= 3 ? r.int32() : absent,
    r.array((x) => [x.string(), x.array((p) => [p.int32(), p.int16()])]),
  ],
  response: (version) => [version >= 3 ? 0 : absent, [["orders", [[0, 0], [1, 28]]], ["ünicode", []]]],
  kafkajs: {
    api: "offsetCommit",
    max: 5,
    args: {
      groupId: "orders-app",
      groupGenerationId: 7,
      memberId: "member-1",
      retentionTime: 86_400_000,
      topics: [{
        topic: "orders",
        partitions: [{ partition: 0, offset: "42", metadata: "meta" }, {
          partition: 1,
          offset: "1099511627776",
        }],
      }],
    },
    decoded: () => ({
      responses: [
        { topic: "orders", partitions: [{ partition: 0, errorCode: 0 }, { partition: 1, errorCode: 28 }] },
        { topic: "ünicode", partitions: [] },
      ],
    }),
  },
};

const fetchedPartitions = [
  { partitionIndex: 0, committedOffset: 42, committedLeaderEpoch: 3, metadata: "meta", errorCode: 0 },
  { partitionIndex: 1, committedOffset: -1, committedLeaderEpoch: -1, metadata: null, errorCode: 0 },
];

const offsetFetch: CodecCase = {
  name: "OffsetFetch",
  api: apiKey.offsetFetch,
  min: 1,
  max: 7,
  read: readOffsetFetchRequest,
  write(version, w) {
    if (version < 6) {
      w.nullableString("orders-app");
      w.array([0], (x) => x.nullableString("orders").array([0, 1], (p, i) => p.int32(i)));
      return;
    }
    w.compactNullableString("orders-app");
    w.compactArray([0], (x) => {
      x.compactNullableString("orders").compactArray([0, 1], (p, i) => p.int32(i)).emptyTaggedFields();
    });
    if (version >= 7) w.boolean(true);
    w.emptyTaggedFields();
  },
  request: (version) => ({
    groupId: "orders-app",
    topics: [{ name: "orders", partitionIndexes: [0, 1] }],
    requireStable: version >= 7,
  }),
  encode: (h) =>
    encodeOffsetFetchResponse(h, {
      topics: [{ name: "orders", partitions: fetchedPartitions }],
      errorCode: 14,
    }),
  readResponse(version, r) {
    const partition = (p: KafkaReader) => [p.int32(), p.int64(), version >= 5 ? p.int32() : absent];
    const throttle = version >= 3 ? r.int32() : absent;
    if (version >= 6) {
      const flexiblePartition = (p: KafkaReader) => {
        const read = [...partition(p), p.compactNullableString(), p.int16()];
        p.skipTaggedFields();
        return read;
      };
      const topics = r.compactArray((x) => {
        const read = [x.compactString(), x.compactArray(flexiblePartition)];
        x.skipTaggedFields();
        return read;
      });
      const errorCode = r.int16();
      r.skipTaggedFields();
      return [throttle, topics, errorCode];
    }
    const topics = r.array((
      x,
    ) => [x.string(), x.array((p) => [...partition(p), p.nullableString(), p.int16()])]);
    return [throttle, topics, version >= 2 ? r.int16() : absent];
  },
  response: (version) => {
    const epoch = (e: number) => version >= 5 ? e : absent;
    const partitions = [[0, 42, epoch(3), "meta", 0], [1, -1, epoch(-1), null, 0]];
    return [version >= 3 ? 0 : absent, [["orders", partitions]], version >= 2 ? 14 : absent];
  },
  kafkajs: {
    api: "offsetFetch",
    max: 4,
    args: {
      groupId: "orders-app",
      topics: [{ topic: "orders", partitions: [{ partition: 0 }, { partition: 1 }] }],
    },
    decoded: (version) => ({
      responses: [{
        topic: "orders",
        partitions: [
          { partition: 0, offset: "42", metadata: "meta", errorCode: 0 },
          { partition: 1, offset: "-1", metadata: null, errorCode: 0 },
        ],
      }],
      ...(version >= 2 ? { errorCode: 14 } : {}),
    }),
  },
};

const listed = {
  errorCode: 0,
  groups: [{ groupId: "orders-app", protocolType: "consumer" }, { groupId: "connect-ü", protocolType: "" }],
};

const listGroups: CodecCase = {
  name: "ListGroups",
  api: apiKey.listGroups,
  min: 0,
  max: 3,
  read: readListGroupsRequest,
  write(version, w) {
    if (version >= 3) w.uvarint(1).uvarint(0).uvarint(1).int8(0); // a tagged field, which the server skips
  },
  request: () => ({}),
  encode: (h) => encodeListGroupsResponse(h, listed),
  readResponse(version, r) {
    const head = [version >= 1 ? r.int32() : absent, r.int16()];
    if (version < 3) return [...head, r.array((g) => [g.string(), g.string()])];
    const groups = r.compactArray((g) => {
      const group = [g.compactString(), g.compactString()];
      g.skipTaggedFields();
      return group;
    });
    r.skipTaggedFields();
    return [...head, groups];
  },
  response: (version) => [version >= 1 ? 0 : absent, 0, [["orders-app", "consumer"], ["connect-ü", ""]]],
  kafkajs: { api: "listGroups", max: 2, args: undefined, decoded: () => listed },
};

const member = {
  memberId: "member-1",
  groupInstanceId: "instance-1",
  clientId: "client-1",
  clientHost: "/10.0.0.1",
  memberMetadata: new Uint8Array([1]),
  memberAssignment: new Uint8Array([2, 3]),
};
const described = [
  {
    errorCode: 0,
    groupId: "orders-app",
    groupState: "Stable",
    protocolType: "consumer",
    protocolData: "range",
  },
  { errorCode: 69, groupId: "gone", groupState: "Dead", protocolType: "", protocolData: "" },
];

const describeGroups: CodecCase = {
  name: "DescribeGroups",
  api: apiKey.describeGroups,
  min: 0,
  max: 4,
  read: readDescribeGroupsRequest,
  write(version, w) {
    w.array(["orders-app", "gone"], (x, id) => x.nullableString(id));
    if (version >= 3) w.boolean(true);
  },
  request: (version) => ({ groups: ["orders-app", "gone"], includeAuthorizedOperations: version >= 3 }),
  encode: (h) =>
    encodeDescribeGroupsResponse(h, {
      groups: [{ ...described[0]!, members: [member] }, { ...described[1]!, members: [] }],
    }),
  readResponse: (version, r) => [
    version >= 1 ? r.int32() : absent,
    r.array((g) => [
      [g.int16(), g.string(), g.string(), g.string(), g.string()],
      g.array((m) => [
        [m.string(), version >= 4 ? m.nullableString() : absent, m.string(), m.string()],
        [m.nullableBytes(), m.nullableBytes()],
      ]),
      version >= 3 ? g.int32() : absent,
    ]),
  ],
  response: (version) => {
    const operations = version >= 3 ? -2147483648 : absent;
    const m = [["member-1", version >= 4 ? "instance-1" : absent, "client-1", "/10.0.0.1"], [[1], [2, 3]]];
    return [version >= 1 ? 0 : absent, [
      [[0, "orders-app", "Stable", "consumer", "range"], [m], operations],
      [[69, "gone", "Dead", "", ""], [], operations],
    ]];
  },
  kafkajs: {
    api: "describeGroups",
    max: 2,
    args: { groupIds: ["orders-app", "gone"] },
    decoded: () => ({
      groups: described.map(({ groupState, protocolData, ...g }, i) => {
        const { groupInstanceId: _, ...m } = member;
        return { ...g, state: groupState, protocol: protocolData, members: i === 0 ? [m] : [] };
      }),
    }),
  },
};

const deleteGroups: CodecCase = {
  name: "DeleteGroups",
  api: apiKey.deleteGroups,
  min: 0,
  max: 1,
  read: readDeleteGroupsRequest,
  write: (_version, w) => w.array(["orders-app", "old"], (x, id) => x.nullableString(id)),
  request: () => ({ groupsNames: ["orders-app", "old"] }),
  encode: (h) =>
    encodeDeleteGroupsResponse(h, {
      results: [{ groupId: "orders-app", errorCode: 68 }, { groupId: "old", errorCode: 0 }],
    }),
  readResponse: (_version, r) => [r.int32(), r.array((x) => [x.string(), x.int16()])],
  response: () => [0, [["orders-app", 68], ["old", 0]]],
  kafkajs: {
    api: "deleteGroups",
    max: 1,
    args: ["orders-app", "old"],
    decoded: () => ({
      results: [
        { groupId: "orders-app", errorCode: 68, error: "NON_EMPTY_GROUP" },
        { groupId: "old", errorCode: 0 },
      ],
    }),
  },
};

testCases([offsetCommit, offsetFetch, listGroups, describeGroups, deleteGroups]);

t.test("OffsetFetch reads a null topic list from v2 as every topic, and refuses it in v1", (t) => {
  const allTopics = (version: number) =>
    new KafkaReader(requestBody(apiKey.offsetFetch, version, (w) => w.nullableString("g").int32(-1)));
  for (const version of [2, 5]) {
    t.same(readOffsetFetchRequest(version, allTopics(version)), {
      groupId: "g",
      topics: null,
      requireStable: false,
    });
  }
  t.throws(() => readOffsetFetchRequest(1, allTopics(1)), KafkaDecodeError);
  t.end();
});

t.test("a null where Kafka forbids one, or an offset beyond 2^53, throws KafkaDecodeError", (t) => {
  const refused = (c: CodecCase, version: number, write: (w: KafkaWriter) => void) =>
    t.throws(() => c.read(version, new KafkaReader(requestBody(c.api, version, write))), KafkaDecodeError);
  const member = (w: KafkaWriter) => w.nullableString("g").int32(1).nullableString("m");
  refused(offsetCommit, 7, (w) => w.nullableString(null));
  refused(offsetCommit, 5, (w) => member(w).array([0], (x) => x.nullableString(null).int32(0)));
  refused(offsetCommit, 5, (w) => {
    const partition = (p: KafkaWriter) => p.int32(0).int64(2 ** 53 + 2).nullableString(null);
    member(w).array([0], (x) => x.nullableString("t").array([0], partition));
  });
  refused(offsetFetch, 5, (w) => w.nullableString("g").array([0], (x) => x.nullableString("t").int32(-1)));
  refused(describeGroups, 0, (w) => w.array([0], (x) => x.nullableString(null)));
  refused(deleteGroups, 1, (w) => w.int32(-1));
  t.end();
});

t.test("every error code is the one kafkajs knows by the same name", (t) => {
  const { errorCodes } = require("kafkajs/src/protocol/error.js") as {
    errorCodes: { type: string; code: number }[];
  };
  // kafkajs keeps some older names.
  const older: Record<string, string> = {
    unknownServerError: "UNKNOWN",
    notLeaderOrFollower: "NOT_LEADER_FOR_PARTITION",
    coordinatorLoadInProgress: "GROUP_LOAD_IN_PROGRESS",
    coordinatorNotAvailable: "GROUP_COORDINATOR_NOT_AVAILABLE",
    notCoordinator: "NOT_COORDINATOR_FOR_GROUP",
  };
  // kafkajs predates these: their numbers are those of Kafka's own `Errors.java`.
  const newer: Record<string, number> = { producerFenced: 90, transactionalIdNotFound: 105 };
  for (const [name, code] of Object.entries(kafkaErrorCode)) {
    if (name === "none") continue;
    const type = older[name] ?? name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
    const known = errorCodes.find((e) => e.type === type)?.code ?? newer[name];
    t.equal(known, code, `${name} is ${type}`);
  }
  t.end();
});
