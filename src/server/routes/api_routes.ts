import type { ProducerEntry } from "../../log/producers/producer_entry.ts";
import type { Catalog, TopicDescription } from "../../broker/catalog/catalog.ts";
import type { DataPlane } from "../../broker/data_plane.ts";
import { checkName, checkTopicName } from "../../broker/catalog/names.ts";
import type { BufferPool } from "../../runtime/memory/buffers.ts";
import type { PieceGate } from "../../runtime/cooperation/piece_gate.ts";
import { ApiError, badRequest } from "../api_errors.ts";
import {
  decodeBody,
  encodeResponse,
  msgpackResponse,
  requestEncoding,
  responseEncoding,
} from "../codec/body_codec.ts";
import { messageView, parseMessages } from "../codec/message_codec.ts";
import { encodePollAnswer } from "../codec/poll_answer_codec.ts";
import { readBody } from "../codec/request_body.ts";
import { parseTopicOptions, patchTopicOptions } from "../codec/topic_options_codec.ts";
import { partitionStatsView, producedView, streamView, topicView } from "../codec/views.ts";
import type { GroupCoordinator } from "../../groups/group_coordinator.ts";
import { offsetsTopicName } from "../../groups/offsets/offsets_log.ts";
import { deleteGroup, groupIdOf, groupsView, groupView, offsetsView, resetOffsets } from "./group_routes.ts";
import type { TxnCoordinator } from "../../transactions/txn_coordinator.ts";
import { transactionalIdOf, transactionsView, transactionView } from "./txn_routes.ts";
import { parseRestoreRequest, type RestoreRunner } from "./restore_route.ts";
import { parseReadReplicaSource, type ReadReplicaRunner } from "./read_replica_route.ts";
import type { ReadReplicaSource } from "../../broker/catalog/topic_options.ts";

export const pollCountDefault = 100;
export const pollCountMax = 10_000;
export const pollBytesDefault = 1024 * 1024;
export const pollBytesMax = 64 * 1024 * 1024;
/** Longest wait of one await request. */
export const awaitTimeoutMsMax = 300_000;

export interface RouteContext {
  request: Request;
  url: URL;
  params: string[];
  catalog: Catalog;
  dataPlane: DataPlane;
  maxRequestBytes: number;
  /** Buffers for produce bodies, lent for the length of one request. */
  requestBodies: BufferPool;
  pieceGate: PieceGate;
  /** The consumer groups' coordinator; null without the Kafka listener. */
  groups: GroupCoordinator | null;
  /** `[kafka] stream`: where the groups' topics live. */
  kafkaStream: string;
  /** The transaction coordinator; null without the Kafka listener. */
  transactions: TxnCoordinator | null;
  /** Restores a topic from the bucket; null without tiered storage. */
  restore: RestoreRunner;
  /** Creates a read-replica topic; null without tiered storage. */
  readReplica: ReadReplicaRunner;
}

type RouteHandler = (ctx: RouteContext) => Promise<Response>;

interface Route {
  method: string;
  /** Path segments; ":name" captures one. */
  pattern: string[];
  handler: RouteHandler;
}

const route = (method: string, path: string, handler: RouteHandler): Route => ({
  method,
  pattern: path.split("/").filter((s) => s !== ""),
  handler,
});

const S = "/streams/:stream";
const T = `${S}/topics/:topic`;
const P = `${T}/partitions/:partition`;

export const apiRoutes: Route[] = [
  route("POST", "/streams", async (c) => {
    const name = checkName("stream", (await body(c))["name"]);
    return reply(c, 201, streamView(await c.catalog.createStream(name)));
  }),
  route(
    "GET",
    "/streams",
    (c) => Promise.resolve(reply(c, 200, { streams: c.catalog.streams().map(streamView) })),
  ),
  route("GET", S, (c) => Promise.resolve(reply(c, 200, streamView(c.catalog.stream(stream(c)))))),
  route("DELETE", S, async (c) => {
    await c.catalog.deleteStream(stream(c));
    return new Response(null, { status: 204 });
  }),
  route("POST", `${S}/topics`, async (c) => {
    const streamName = stream(c);
    const b = await body(c);
    const name = writable(c, streamName, checkTopicName(b["name"]));
    const source = parseReadReplicaSource(b);
    if (source !== null) {
      return reply(c, 201, topicView(await createReadReplica(c, streamName, name, source)));
    }
    const options = parseTopicOptions(b, c.catalog.topicDefaults);
    return reply(c, 201, topicView(await c.catalog.createTopic(streamName, name, options)));
  }),
  route(
    "GET",
    T,
    (c) => Promise.resolve(reply(c, 200, topicView(c.catalog.describeTopic(stream(c), topic(c))))),
  ),
  route("PATCH", T, async (c) => {
    const streamName = stream(c);
    const topicName = writable(c, streamName, topic(c));
    const b = await body(c);
    // The patch applies to the options current under the catalog's lock.
    const patched = await c.catalog.patchTopic(
      streamName,
      topicName,
      (o) => patchTopicOptions(o, b, c.catalog.topicDefaults),
    );
    return reply(c, 200, topicView(patched));
  }),
  route("DELETE", T, async (c) => {
    await c.catalog.deleteTopic(stream(c), writable(c, stream(c), topic(c)));
    return new Response(null, { status: 204 });
  }),
  route("POST", `${T}/messages`, async (c) => {
    const read = await readBody(c.request, c.maxRequestBytes, c.requestBodies);
    try {
      const b = await decoded(c, read.bytes);
      const partitionId = b["partition"] === undefined || b["partition"] === null
        ? undefined
        : partitionNumber(b["partition"]);
      const messages = parseMessages(b, requestEncoding(c.request));
      return reply(
        c,
        200,
        producedView(
          await c.dataPlane.produce(stream(c), writable(c, stream(c), topic(c)), partitionId, messages),
        ),
      );
    } finally {
      // The payloads are views of the body; once the append has ended (or failed) the log has copied
      // them into its write buffer, or never will, and the body's buffer can serve another request.
      read.release();
    }
  }),
  route("DELETE", `${T}/messages`, async (c) => {
    await c.dataPlane.purgeTopic(stream(c), writable(c, stream(c), topic(c)));
    return new Response(null, { status: 204 });
  }),
  route(
    "GET",
    P,
    (c) =>
      Promise.resolve(
        reply(c, 200, partitionStatsView(c.dataPlane.partitionStats(stream(c), topic(c), partition(c)))),
      ),
  ),
  route("GET", `${P}/messages`, async (c) => {
    const q = c.url.searchParams;
    const timestampMs = queryInt(q, "timestamp", null, 0, Math.floor(Number.MAX_SAFE_INTEGER / 1000));
    const offset = queryInt(q, "offset", null, 0, Number.MAX_SAFE_INTEGER);
    if (timestampMs !== null && offset !== null) {
      throw badRequest("invalid_query", "Cannot poll: give offset or timestamp, not both");
    }
    const committed = queryIsolation(q);
    if (committed && timestampMs !== null) {
      throw badRequest("invalid_query", "Cannot poll: read_committed reads from an offset, not a timestamp");
    }
    const result = await c.dataPlane.poll(stream(c), topic(c), partition(c), {
      ...(timestampMs !== null ? { timestampMs } : { offset: offset ?? 0 }),
      committed,
      count: queryInt(q, "count", pollCountDefault, 1, pollCountMax)!,
      maxBytes: queryInt(q, "max_bytes", pollBytesDefault, 1, pollBytesMax)!,
    });
    const encoding = responseEncoding(c.request);
    const response = encoding === "msgpack"
      ? msgpackResponse(200, encodePollAnswer(result.messages, result.nextOffset), { freeWhenRead: true })
      : encodeResponse(200, {
        messages: result.messages.map((m) => messageView(m)),
        next_offset: result.nextOffset,
      }, encoding);
    // The answer holds copies now: the windows the messages were views into can be reused.
    result.release();
    return response;
  }),
  route("GET", `${P}/tier/await`, async (c) => {
    const q = c.url.searchParams;
    const offset = queryInt(q, "offset", null, 0, Number.MAX_SAFE_INTEGER);
    if (offset === null) {
      throw badRequest("invalid_query", "Cannot await the tiered floor: offset is required");
    }
    const timeoutMs = queryInt(q, "timeout_ms", 30_000, 1, awaitTimeoutMsMax)!;
    const reached = await c.dataPlane.awaitTiered(stream(c), topic(c), partition(c), offset, timeoutMs);
    if (!reached) {
      throw new ApiError(
        408,
        "timeout",
        `Cannot confirm offset ${offset} is in the object store within ${timeoutMs} ms`,
      );
    }
    return reply(c, 200, { offset, tiered: true });
  }),
  route("PUT", `${P}/consumers/:consumer/offset`, async (c) => {
    const consumer = checkName("consumer", c.params[3]);
    const offset = (await body(c))["offset"];
    if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) {
      throw badRequest(
        "invalid_offset",
        "Cannot store consumer offset: offset must be a non-negative integer",
      );
    }
    await c.dataPlane.storeConsumerOffset(stream(c), topic(c), partition(c), consumer, offset);
    return reply(c, 200, { consumer, offset });
  }),
  route("GET", `${P}/consumers/:consumer/offset`, (c) => {
    const consumer = checkName("consumer", c.params[3]);
    return Promise.resolve(
      reply(c, 200, {
        consumer,
        offset: c.dataPlane.consumerOffset(stream(c), topic(c), partition(c), consumer),
      }),
    );
  }),
  route("GET", `${P}/producers`, (c) =>
    Promise.resolve(
      reply(c, 200, {
        producers: c.dataPlane.producers(stream(c), topic(c), partition(c)).map(producerView),
      }),
    )),
  route("GET", "/groups", (c) => Promise.resolve(reply(c, 200, groupsView(c)))),
  route("GET", "/groups/:group", (c) => Promise.resolve(reply(c, 200, groupView(c, groupIdOf(c.params[0]))))),
  route("DELETE", "/groups/:group", async (c) => {
    await deleteGroup(c, groupIdOf(c.params[0]));
    return new Response(null, { status: 204 });
  }),
  route(
    "GET",
    "/groups/:group/offsets",
    (c) => Promise.resolve(reply(c, 200, offsetsView(c, groupIdOf(c.params[0])))),
  ),
  route("PUT", "/groups/:group/offsets", async (c) => {
    return reply(c, 200, await resetOffsets(c, groupIdOf(c.params[0]), await body(c)));
  }),
  route(
    "GET",
    "/transactions",
    (c) => Promise.resolve(reply(c, 200, transactionsView(c.transactions, c.url))),
  ),
  route(
    "GET",
    "/transactions/:id",
    (c) => Promise.resolve(reply(c, 200, transactionView(c.transactions, transactionalIdOf(c.params[0])))),
  ),
  route("POST", "/admin/restore", async (c) => {
    const request = parseRestoreRequest(await body(c));
    if (c.restore === null) {
      throw badRequest(
        "tiering_disabled",
        "Cannot restore: tiered storage is off on this server (no bucket)",
      );
    }
    const report = await c.restore(request);
    return reply(c, request.dryRun ? 200 : 201, report);
  }),
];

/** Finds the route for a path; `allowed` lists the methods the path has when the method is wrong. */
export function matchRoute(
  method: string,
  segments: string[],
): { route: Route; params: string[] } | { allowed: string[] } | null {
  const allowed: string[] = [];
  for (const r of apiRoutes) {
    if (r.pattern.length !== segments.length) continue;
    const params: string[] = [];
    const matches = r.pattern.every((p, i) => {
      if (p.startsWith(":")) {
        params.push(segments[i]!);
        return true;
      }
      return p === segments[i];
    });
    if (!matches) continue;
    if (r.method === method) return { route: r, params };
    allowed.push(r.method);
  }
  return allowed.length > 0 ? { allowed } : null;
}

function reply(c: RouteContext, status: number, value: unknown): Response {
  return encodeResponse(status, value, responseEncoding(c.request));
}

async function body(c: RouteContext): Promise<Record<string, unknown>> {
  return await decoded(c, (await readBody(c.request, c.maxRequestBytes)).bytes);
}

async function decoded(c: RouteContext, bytes: Uint8Array): Promise<Record<string, unknown>> {
  // Decoding a body (a produce request carries up to max_request_bytes) is a piece of work.
  await c.pieceGate.turn();
  return decodeBody(bytes, requestEncoding(c.request));
}

const stream = (c: RouteContext) => checkName("stream", c.params[0]);

/**
 * The topic, unless it is the Kafka stream's `__consumer_offsets`: only the group coordinator writes
 * there, and its options and existence are the coordinator's (the groups' routes change it).
 */
function createReadReplica(
  c: RouteContext,
  streamName: string,
  name: string,
  source: ReadReplicaSource,
): Promise<TopicDescription> {
  if (c.readReplica === null) {
    throw badRequest(
      "tiering_disabled",
      "Cannot create a read replica: tiered storage is off on this server",
    );
  }
  return c.readReplica(streamName, name, source);
}

function writable(c: RouteContext, streamName: string, topicName: string): string {
  if (streamName === c.kafkaStream && topicName === offsetsTopicName) {
    throw badRequest(
      "internal_topic",
      `Cannot change ${streamName}/${topicName}: it holds the consumer groups' offsets (see /groups)`,
    );
  }
  return topicName;
}
const topic = (c: RouteContext) => checkTopicName(c.params[1]);
const partition = (c: RouteContext) => partitionNumber(c.params[2]);

function partitionNumber(value: unknown): number {
  const n = typeof value === "string" && /^\d{1,9}$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
    throw badRequest(
      "invalid_partition",
      `Cannot use partition ${JSON.stringify(value)}: expected a non-negative integer`,
    );
  }
  return n;
}

function queryInt(
  q: URLSearchParams,
  name: string,
  fallback: number | null,
  min: number,
  max: number,
): number | null {
  const raw = q.get(name);
  if (raw === null || raw === "") return fallback;
  const n = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw badRequest("invalid_query", `Cannot poll: ${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}

/** An idempotent producer as the HTTP API shows it: its epoch, last batch and when it last wrote. */
/** A producer's state; one known by a transaction marker alone has no last batch (nulls). */
function producerView(entry: ProducerEntry) {
  const last = entry.batches.at(-1);
  return {
    producer_id: entry.producerId,
    epoch: entry.epoch,
    last_sequence: last?.lastSequence ?? null,
    last_offset: last?.lastOffset ?? null,
    last_timestamp_ms: entry.lastTimestampMs,
    batches_kept: entry.batches.length,
    transaction_first_offset: entry.txnFirstOffset ?? null,
    coordinator_epoch: entry.coordinatorEpoch ?? null,
  };
}

/** `isolation`: `read_uncommitted` (the default, as Kafka's) or `read_committed`; true for the latter. */
function queryIsolation(q: URLSearchParams): boolean {
  const isolation = q.get("isolation") ?? "read_uncommitted";
  if (isolation !== "read_committed" && isolation !== "read_uncommitted") {
    throw badRequest(
      "invalid_query",
      `Cannot poll: isolation must be read_committed or read_uncommitted, not ${
        JSON.stringify(isolation.slice(0, 64))
      }`,
    );
  }
  return isolation === "read_committed";
}
