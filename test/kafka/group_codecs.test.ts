import t from "tap";
import { Buffer } from "node:buffer";
import {
  encodeFindCoordinatorResponse,
  type FindCoordinatorResponse,
  readFindCoordinatorRequest,
} from "../../src/kafka/apis/find_coordinator_codec.ts";
import { encodeHeartbeatResponse, readHeartbeatRequest } from "../../src/kafka/groups/heartbeat_codec.ts";
import {
  encodeJoinGroupResponse,
  type JoinGroupResponse,
  readJoinGroupRequest,
} from "../../src/kafka/groups/join_group_codec.ts";
import { KafkaDecodeError, KafkaReader, type KafkaWriter } from "../../src/kafka/wire/kafka_codec.ts";
import {
  encodeLeaveGroupResponse,
  type LeaveGroupResponse,
  readLeaveGroupRequest,
} from "../../src/kafka/groups/leave_group_codec.ts";
import { apiKey, isFlexible } from "../../src/kafka/wire/frame_codec.ts";
import { encodeSyncGroupResponse, readSyncGroupRequest } from "../../src/kafka/groups/sync_group_codec.ts";
import { absent, type CodecCase, requestBody, testCases } from "../helpers/codec_cases.ts";

/**
 * The wire codecs of the consumer-group membership APIs (FindCoordinator, JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup): every version's request as a client writes it reads back, every
 * version's response reads back field by field, kafkajs's own encoders' requests read and
 * kafkajs's decoders read our responses, and a truncated body, a forbidden null or a version out
 * of range is refused. Also: the group APIs' first flexible versions are Kafka's.
 */

const coordinator: FindCoordinatorResponse = {
  errorCode: 15,
  errorMessage: "not here",
  nodeId: 3,
  host: "broker-ü",
  port: 9092,
};

const findCoordinator: CodecCase = {
  name: "FindCoordinator",
  api: apiKey.findCoordinator,
  min: 0,
  max: 3,
  read: readFindCoordinatorRequest,
  write(version, w) {
    if (version < 3) {
      w.nullableString("orders-app");
      if (version >= 1) w.int8(1);
      return;
    }
    w.compactNullableString("orders-app").int8(1);
    w.uvarint(1).uvarint(7).uvarint(2).int16(0x0102); // a tagged field, which the server skips
  },
  request: (version) => ({ key: "orders-app", keyType: version >= 1 ? 1 : 0 }),
  // The flexible version's error message is null, written as a compact null.
  encode: (h) =>
    encodeFindCoordinatorResponse(h, { ...coordinator, errorMessage: h.apiVersion >= 3 ? null : "not here" }),
  readResponse(version, r) {
    const string = () => version >= 3 ? r.compactNullableString() : r.nullableString();
    const throttle = version >= 1 ? r.int32() : absent;
    const errorCode = r.int16();
    const fields = [throttle, errorCode, version >= 1 ? string() : absent, r.int32(), string(), r.int32()];
    if (version >= 3) r.skipTaggedFields();
    return fields;
  },
  response: (version) => {
    const errorMessage = version >= 3 ? null : version >= 1 ? "not here" : absent;
    return [version >= 1 ? 0 : absent, 15, errorMessage, 3, "broker-ü", 9092];
  },
  kafkajs: {
    api: "findCoordinator",
    max: 2,
    args: { groupId: "orders-app", coordinatorKey: "orders-app", coordinatorType: 1 },
    decoded: (version) => ({
      errorCode: 15,
      ...(version >= 1 ? { errorMessage: "not here" } : {}),
      coordinator: { nodeId: 3, host: "broker-ü", port: 9092 },
    }),
  },
};

const protocols = [{ name: "range", metadata: [0, 1, 2] }, { name: "roundrobin", metadata: [] }];
const joined: JoinGroupResponse = {
  errorCode: 79,
  generationId: 7,
  protocolName: "range",
  leader: "member-1",
  memberId: "member-2",
  members: [
    { memberId: "member-1", groupInstanceId: "instance-1", metadata: new Uint8Array([1, 2]) },
    { memberId: "member-2", groupInstanceId: null, metadata: new Uint8Array(0) },
  ],
};

const joinGroup: CodecCase = {
  name: "JoinGroup",
  api: apiKey.joinGroup,
  min: 2,
  max: 5,
  read: readJoinGroupRequest,
  write(version, w) {
    w.nullableString("orders-app").int32(10_000).int32(60_000).nullableString("member-1");
    if (version >= 5) w.nullableString("instance-1");
    w.nullableString("consumer");
    w.array(protocols, (x, p) => x.nullableString(p.name).nullableBytes(new Uint8Array(p.metadata)));
  },
  request: (version) => ({
    groupId: "orders-app",
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 60_000,
    memberId: "member-1",
    groupInstanceId: version >= 5 ? "instance-1" : null,
    protocolType: "consumer",
    protocols,
  }),
  encode: (h) => encodeJoinGroupResponse(h, joined),
  readResponse: (version, r) => [
    [r.int32(), r.int16(), r.int32(), r.string(), r.string(), r.string()],
    r.array((m) => [m.string(), version >= 5 ? m.nullableString() : absent, m.nullableBytes()]),
  ],
  response: (version) => [[0, 79, 7, "range", "member-1", "member-2"], [
    ["member-1", version >= 5 ? "instance-1" : absent, [1, 2]],
    ["member-2", version >= 5 ? null : absent, []],
  ]],
  kafkajs: {
    api: "joinGroup",
    max: 5,
    args: {
      groupId: "orders-app",
      sessionTimeout: 10_000,
      rebalanceTimeout: 60_000,
      memberId: "member-1",
      groupInstanceId: "instance-1",
      protocolType: "consumer",
      groupProtocols: protocols.map((p) => ({ name: p.name, metadata: Buffer.from(p.metadata) })),
    },
    decoded: (version) => ({
      errorCode: 79,
      generationId: 7,
      groupProtocol: "range",
      leaderId: "member-1",
      memberId: "member-2",
      members: [
        {
          memberId: "member-1",
          ...(version >= 5 ? { groupInstanceId: "instance-1" } : {}),
          memberMetadata: [1, 2],
        },
        { memberId: "member-2", ...(version >= 5 ? { groupInstanceId: null } : {}), memberMetadata: [] },
      ],
    }),
  },
};

const assignments = [{ memberId: "member-1", assignment: [9, 8] }, { memberId: "member-2", assignment: [] }];

const syncGroup: CodecCase = {
  name: "SyncGroup",
  api: apiKey.syncGroup,
  min: 0,
  max: 3,
  read: readSyncGroupRequest,
  write(version, w) {
    w.nullableString("orders-app").int32(7).nullableString("member-1");
    if (version >= 3) w.nullableString("instance-1");
    w.array(assignments, (x, a) => x.nullableString(a.memberId).nullableBytes(new Uint8Array(a.assignment)));
  },
  request: (version) => ({
    groupId: "orders-app",
    generationId: 7,
    memberId: "member-1",
    groupInstanceId: version >= 3 ? "instance-1" : null,
    assignments,
  }),
  encode: (h) => encodeSyncGroupResponse(h, { errorCode: 27, assignment: new Uint8Array([5, 6, 7]) }),
  readResponse: (version, r) => [version >= 1 ? r.int32() : absent, r.int16(), r.nullableBytes()],
  response: (version) => [version >= 1 ? 0 : absent, 27, [5, 6, 7]],
  kafkajs: {
    api: "syncGroup",
    max: 3,
    args: {
      groupId: "orders-app",
      generationId: 7,
      memberId: "member-1",
      groupInstanceId: "instance-1",
      groupAssignment: assignments.map((a) => ({
        memberId: a.memberId,
        memberAssignment: Buffer.from(a.assignment),
      })),
    },
    decoded: () => ({ errorCode: 27, memberAssignment: [5, 6, 7] }),
  },
};

const heartbeat: CodecCase = {
  name: "Heartbeat",
  api: apiKey.heartbeat,
  min: 0,
  max: 3,
  read: readHeartbeatRequest,
  write(version, w) {
    w.nullableString("orders-app").int32(7).nullableString("member-1");
    if (version >= 3) w.nullableString("instance-1");
  },
  request: (version) => ({
    groupId: "orders-app",
    generationId: 7,
    memberId: "member-1",
    groupInstanceId: version >= 3 ? "instance-1" : null,
  }),
  encode: (h) => encodeHeartbeatResponse(h, { errorCode: 27 }),
  readResponse: (version, r) => [version >= 1 ? r.int32() : absent, r.int16()],
  response: (version) => [version >= 1 ? 0 : absent, 27],
  kafkajs: {
    api: "heartbeat",
    max: 3,
    args: {
      groupId: "orders-app",
      groupGenerationId: 7,
      memberId: "member-1",
      groupInstanceId: "instance-1",
    },
    decoded: () => ({ errorCode: 27 }),
  },
};

const leavers = [
  { memberId: "member-1", groupInstanceId: null },
  { memberId: "", groupInstanceId: "instance-2" },
];
const left: LeaveGroupResponse = {
  errorCode: 0,
  members: [{ ...leavers[0]!, errorCode: 0 }, { ...leavers[1]!, errorCode: 82 }],
};

const leaveGroup: CodecCase = {
  name: "LeaveGroup",
  api: apiKey.leaveGroup,
  min: 0,
  max: 3,
  read: readLeaveGroupRequest,
  write(version, w) {
    w.nullableString("orders-app");
    if (version < 3) w.nullableString("member-1");
    else w.array(leavers, (x, m) => x.nullableString(m.memberId).nullableString(m.groupInstanceId));
  },
  request: (version) => ({ groupId: "orders-app", members: version >= 3 ? leavers : [leavers[0]] }),
  encode: (h) => encodeLeaveGroupResponse(h, left),
  readResponse: (version, r) => [
    version >= 1 ? r.int32() : absent,
    r.int16(),
    version >= 3 ? r.array((m) => [m.string(), m.nullableString(), m.int16()]) : absent,
  ],
  response: (version) => [
    version >= 1 ? 0 : absent,
    0,
    version >= 3 ? [["member-1", null, 0], ["", "instance-2", 82]] : absent,
  ],
  kafkajs: {
    api: "leaveGroup",
    max: 3,
    args: { groupId: "orders-app", memberId: "member-1", members: leavers },
    decoded: (version) => version >= 3 ? { errorCode: 0, members: left.members } : { errorCode: 0 },
  },
};

testCases([findCoordinator, joinGroup, syncGroup, heartbeat, leaveGroup]);

t.test("metadata and assignments read are copies, not views into the frame", (t) => {
  const join = requestBody(apiKey.joinGroup, 5, (w) => joinGroup.write(5, w));
  t.not(readJoinGroupRequest(5, new KafkaReader(join)).protocols[0]!.metadata.buffer, join.buffer);
  const sync = requestBody(apiKey.syncGroup, 3, (w) => syncGroup.write(3, w));
  t.not(readSyncGroupRequest(3, new KafkaReader(sync)).assignments[0]!.assignment.buffer, sync.buffer);
  t.end();
});

t.test("a null where Kafka forbids one throws KafkaDecodeError", (t) => {
  const refused = (c: CodecCase, version: number, write: (w: KafkaWriter) => void) =>
    t.throws(() => c.read(version, new KafkaReader(requestBody(c.api, version, write))), KafkaDecodeError);
  const member = (w: KafkaWriter) => w.nullableString("g").int32(1).nullableString("m");
  refused(joinGroup, 5, (w) => w.nullableString(null));
  refused(joinGroup, 2, (w) => {
    w.nullableString("g").int32(1).int32(2).nullableString("").nullableString("consumer");
    w.array([0], (x) => x.nullableString("range").nullableBytes(null));
  });
  refused(syncGroup, 0, (w) => member(w).array([0], (x) => x.nullableString("m").nullableBytes(null)));
  refused(findCoordinator, 3, (w) => w.compactNullableString(null).int8(0).emptyTaggedFields());
  refused(heartbeat, 1, (w) => w.nullableString("g").int32(1).nullableString(null));
  refused(leaveGroup, 3, (w) => w.nullableString("g").int32(-1));
  t.end();
});

t.test("the group APIs' first flexible versions are Kafka's", (t) => {
  const firstFlexible = {
    offsetCommit: 8,
    offsetFetch: 6,
    findCoordinator: 3,
    joinGroup: 6,
    heartbeat: 4,
    leaveGroup: 4,
    syncGroup: 4,
    describeGroups: 5,
    listGroups: 3,
    deleteGroups: 2,
  } as const;
  for (const [name, first] of Object.entries(firstFlexible)) {
    const api = apiKey[name as keyof typeof firstFlexible];
    t.same([isFlexible(api, first - 1), isFlexible(api, first)], [false, true], `${name} from v${first}`);
  }
  t.end();
});
