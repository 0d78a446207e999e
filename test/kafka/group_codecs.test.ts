/**
 * The wire codecs of the consumer-group membership APIs (FindCoordinator, JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup): every version's request as a client writes it reads back, every
 * version's response reads back field by field, kafkajs's own encoders' requests read and
 * kafkajs's decoders read our responses, and a truncated body, a forbidden null or a version out
 * of range is refused. Also: the group APIs' first flexible versions are Kafka's.
 */
import t, { type Test } from "tap";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import {
  encodeFindCoordinatorResponse,
  type FindCoordinatorResponse,
  readFindCoordinatorRequest,
} from "../../src/kafka/find_coordinator.ts";
import { encodeHeartbeatResponse, readHeartbeatRequest } from "../../src/kafka/heartbeat.ts";
import {
  encodeJoinGroupResponse,
  type JoinGroupResponse,
  readJoinGroupRequest,
} from "../../src/kafka/join_group.ts";
import { KafkaDecodeError, KafkaReader } from "../../src/kafka/kafka_reader.ts";
import type { KafkaWriter } from "../../src/kafka/kafka_writer.ts";
import {
  encodeLeaveGroupResponse,
  type LeaveGroupResponse,
  readLeaveGroupRequest,
} from "../../src/kafka/leave_group.ts";
import { apiKey, isFlexible, readRequestHeader, type RequestHeader } from "../../src/kafka/request_header.ts";
import { encodeSyncGroupResponse, readSyncGroupRequest } from "../../src/kafka/sync_group.ts";
import { kafkaRequest } from "../helpers/kafka_wire.ts";

/**
 * One API's codec under test: `write` writes the request of a version as a client writes it and
 * `request` is what it reads as; `encode` encodes the case's response and `readResponse` reads it
 * back field by field as `response` (`absent` where the version has no such field). kafkajs's
 * encoder, given `args`, writes the same request; its decoder reads the response as `decoded`.
 */
interface CodecCase {
  name: string;
  api: number;
  min: number;
  max: number;
  read: (version: number, body: KafkaReader) => unknown;
  write: (version: number, w: KafkaWriter) => void;
  request: (version: number) => unknown;
  encode: (header: RequestHeader) => Uint8Array;
  readResponse: (version: number, r: KafkaReader) => unknown;
  response: (version: number) => unknown;
  kafkajs: { api: string; max: number; args: unknown; decoded: (version: number) => unknown };
}

const absent = "-";
const header = (api: number, apiVersion: number) => ({
  apiKey: api,
  apiVersion,
  correlationId: 9,
  clientId: "c",
});
const range = (min: number, max: number) => Array.from({ length: max - min + 1 }, (_, i) => min + i);

/** A request's body as a client writes it: after the size field and the request header. */
function requestBody(api: number, version: number, write: (w: KafkaWriter) => void): Uint8Array {
  const frame = kafkaRequest(api, version, 1, write);
  return frame.subarray(4 + readRequestHeader(frame.subarray(4)).body.position);
}

/** Bytes as number arrays, and a kafkajs error as its type, so that `t.same` compares by value. */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return [...value];
  if (value instanceof Error) return (value as Error & { type?: string }).type ?? value.name;
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
}

const require = createRequire(import.meta.url);
type KafkajsRequest = (args: unknown) => { encode(): Promise<{ buffer: Uint8Array }> };
type KafkajsDecode = (body: Buffer) => Promise<Record<string, unknown>>;

/** Registers each case's test: every version both ways, kafkajs's versions, and the refusals. */
function testCases(cases: readonly CodecCase[]): void {
  for (const c of cases) {
    t.test(`${c.name} v${c.min} to v${c.max}`, async (t) => {
      for (const version of range(c.min, c.max)) {
        const body = new KafkaReader(requestBody(c.api, version, (w) => c.write(version, w)));
        t.same(plain(c.read(version, body)), plain(c.request(version)), `v${version}: the request reads`);
        t.equal(body.remaining, 0, `v${version}: the whole request is read`);
        const r = new KafkaReader(c.encode(header(c.api, version)));
        t.equal(r.int32(), 9, "correlation id");
        if (isFlexible(c.api, version)) r.skipTaggedFields();
        t.same(plain(c.readResponse(version, r)), plain(c.response(version)), `v${version}: the response`);
        t.equal(r.remaining, 0, `v${version}: nothing more in the response`);
        if (version <= c.kafkajs.max) await crossCheck(t, c, version);
      }
      refusals(t, c);
    });
  }
}

/** kafkajs's request of `version` reads as the client's does; its decoder reads the response. */
async function crossCheck(t: Test, c: CodecCase, version: number): Promise<void> {
  const at = `kafkajs/src/protocol/requests/${c.kafkajs.api}/v${version}`;
  const request = require(`${at}/request.js`) as KafkajsRequest;
  const body = new KafkaReader(new Uint8Array((await request(c.kafkajs.args).encode()).buffer));
  t.same(plain(c.read(version, body)), plain(c.request(version)), `v${version}: kafkajs's request reads`);
  t.equal(body.remaining, 0, `v${version}: the whole of kafkajs's request is read`);
  const { decode } = require(`${at}/response.js`) as { decode: KafkajsDecode };
  const decoded = await decode(Buffer.from(c.encode(header(c.api, version)).subarray(4)));
  const { throttleTime: _a, clientSideThrottleTime: _b, throttleTimeMs: _c, ...fields } = decoded;
  t.same(plain(fields), plain(c.kafkajs.decoded(version)), `v${version}: kafkajs reads the response`);
}

/** Every cut of the top version's request, and a version either side of the range, are refused. */
function refusals(t: Test, c: CodecCase): void {
  const body = requestBody(c.api, c.max, (w) => c.write(c.max, w));
  const unrefused = range(0, body.length - 1).filter((length) => {
    try {
      c.read(c.max, new KafkaReader(body.subarray(0, length)));
      return true;
    } catch (e) {
      return !(e instanceof KafkaDecodeError);
    }
  });
  t.same(unrefused, [], `every cut of the ${body.length}-byte v${c.max} request throws KafkaDecodeError`);
  for (const version of [c.min - 1, c.max + 1]) {
    t.throws(() => c.read(version, new KafkaReader(body)), KafkaDecodeError, `v${version} is not read`);
    t.throws(() => c.encode(header(c.api, version)), RangeError, `v${version} is not encoded`);
  }
}

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
