import { isBug } from "../runtime/assert.ts";
import type { RestoreRunner } from "./routes/restore_route.ts";
import type { ReadReplicaRunner } from "./routes/read_replica_route.ts";
import { scrapePieces } from "../runtime/metrics/labelled_series.ts";
import type { GroupCoordinator } from "../groups/group_coordinator.ts";
import type { TxnCoordinator } from "../transactions/txn_coordinator.ts";
import type { Registry } from "prom-client";
import type { BufferPool } from "../runtime/memory/buffers.ts";
import type { Logger } from "../runtime/logger.ts";
import type { PieceGate } from "../runtime/cooperation/piece_gate.ts";
import type { Pump } from "../runtime/cooperation/pump.ts";
import type { Catalog } from "../broker/catalog/catalog.ts";
import type { DataPlane } from "../broker/data_plane.ts";
import { matchRoute } from "./routes/api_routes.ts";
import { apiErrorOf } from "./broker_error_status.ts";
import { NotLeaderError } from "../broker/broker_errors.ts";
import { errorResponse, jsonResponse } from "./api_errors.ts";

export type FetchHandler = (request: Request) => Promise<Response>;

export interface HttpHandlerDeps {
  registry: Registry;
  pumps: readonly Pump[];
  catalog: Catalog;
  dataPlane: DataPlane;
  logger: Logger;
  maxRequestBytes: number;
  /** Buffers for produce bodies (`request_body.ts`), shared by every request. */
  requestBodies: BufferPool;
  /** When non-empty, every request needs `Authorization: Bearer <one of these>`. */
  tokens: readonly string[];
  /** The process's piece gate: each request starts, and decodes its body, on a turn of its own. */
  pieceGate: PieceGate;
  /** In a cluster: the "host:port" of a node's HTTP API, for redirects to a partition's leader. */
  httpAddressOf?: (nodeId: number) => string | null;
  /** The consumer groups' coordinator; absent or null without the Kafka listener (`/groups` is 404). */
  groups?: GroupCoordinator | null;
  /** `[kafka] stream`, where the groups' topics live ("kafka" when absent). */
  kafkaStream?: string;
  /** The transaction coordinator; absent or null without the Kafka listener (`/transactions` is 404). */
  transactions?: TxnCoordinator | null;
  /** Restores a topic from the bucket (`POST /admin/restore`); absent or null without tiered storage. */
  restore?: RestoreRunner;
  /** Creates read-replica topics (`POST .../topics` with `read_replica_of`); absent or null without tiered storage. */
  readReplica?: ReadReplicaRunner;
}

/**
 * The HTTP API as a fetch-style function, served by `Deno.serve` in the entry point and called
 * directly by tests under Node, without a socket. Bad input never reaches a 500: every refusal (an
 * `ApiError`, or a broker error that `apiErrorOf` maps) is a 4xx, a 503 for transient conditions or
 * a 502 for remote data at fault, with the JSON error body.
 */
export function createHttpHandler(deps: HttpHandlerDeps): FetchHandler {
  return async (request) => {
    // Requests that arrive together would otherwise all parse, route and start their work in one
    // turn of the loop, ahead of the consensus tick; each takes a turn instead.
    await deps.pieceGate.turn();
    const url = new URL(request.url);
    try {
      if (!authorized(request, deps.tokens)) {
        return errorResponse(
          401,
          "unauthorized",
          "Cannot authorize request: a valid bearer token is required",
          {
            "www-authenticate": "Bearer",
          },
        );
      }
      const builtin = builtins[url.pathname];
      if (builtin !== undefined) {
        if (request.method !== "GET" && request.method !== "HEAD") {
          return methodNotAllowed(request, url, ["GET", "HEAD"]);
        }
        return await builtin(deps);
      }
      const segments = splitPath(url.pathname);
      const match = segments === null ? null : matchRoute(request.method, segments);
      if (match === null) {
        return errorResponse(404, "not_found", `Cannot ${request.method} ${url.pathname}: no such endpoint`);
      }
      if ("allowed" in match) return methodNotAllowed(request, url, match.allowed);
      return await match.route.handler({
        request,
        url,
        params: match.params,
        catalog: deps.catalog,
        dataPlane: deps.dataPlane,
        maxRequestBytes: deps.maxRequestBytes,
        requestBodies: deps.requestBodies,
        pieceGate: deps.pieceGate,
        groups: deps.groups ?? null,
        kafkaStream: deps.kafkaStream ?? "kafka",
        transactions: deps.transactions ?? null,
        restore: deps.restore ?? null,
        readReplica: deps.readReplica ?? null,
      });
    } catch (error) {
      if (error instanceof NotLeaderError) return notLeaderResponse(error, url, deps.httpAddressOf);
      const refusal = apiErrorOf(error);
      if (refusal !== null) {
        return errorResponse(refusal.status, refusal.code, refusal.message, refusal.headers);
      }
      const what = isBug(error) ? "bug: a request threw; the request stops" : "request failed";
      deps.logger.error(what, { method: request.method, path: url.pathname, error });
      return errorResponse(500, "internal_error", `Cannot ${request.method} ${url.pathname}: internal error`);
    }
  };
}

/**
 * A request for a partition another node leads: a 307 to the same path on the leader's HTTP
 * address (the method and body go along), or, with no leader known now, a 503 to retry.
 */
function notLeaderResponse(
  error: NotLeaderError,
  url: URL,
  httpAddressOf: ((nodeId: number) => string | null) | undefined,
): Response {
  const address = error.leaderId === null ? null : httpAddressOf?.(error.leaderId) ?? null;
  if (address === null) {
    return errorResponse(503, "not_leader", error.message, { "retry-after": "1" });
  }
  const location = `${url.protocol}//${address}${url.pathname}${url.search}`;
  return errorResponse(307, "not_leader", error.message, { location });
}

const builtins: Record<string, (deps: HttpHandlerDeps) => Promise<Response>> = {
  "/metrics": async ({ registry }) =>
    // The pieces as they are: a Blob holds them without joining them into one string or buffer.
    new Response(new Blob(await scrapePieces(registry)), {
      status: 200,
      headers: { "content-type": registry.contentType },
    }),
  "/health": ({ pumps }) =>
    Promise.resolve(jsonResponse(200, {
      status: "ok",
      shards: pumps.map((pump) => {
        const s = pump.snapshot();
        return {
          shard: pump.shard,
          ticks: s.ticks,
          missed_ticks: s.missedTicks,
          tick_lateness_ms: { p50: s.p50Ms, p99: s.p99Ms, p999: s.p999Ms, max: s.maxMs },
        };
      }),
    })),
};

function authorized(request: Request, tokens: readonly string[]): boolean {
  if (tokens.length === 0) return true;
  const header = request.headers.get("authorization") ?? "";
  const match = /^Bearer (.+)$/.exec(header);
  return match !== null && tokens.includes(match[1]!);
}

function methodNotAllowed(request: Request, url: URL, allowed: string[]): Response {
  return errorResponse(
    405,
    "method_not_allowed",
    `Cannot ${request.method} ${url.pathname}: use ${allowed.join(" or ")}`,
    {
      allow: allowed.join(", "),
    },
  );
}

/** Path segments, percent-decoded; null when a segment is not valid percent-encoding. */
function splitPath(pathname: string): string[] | null {
  try {
    return pathname.split("/").filter((s) => s !== "").map((s) => decodeURIComponent(s));
  } catch (error) {
    // Bad percent-encoding: the caller answers 400, which is the client's record of it.
    if (error instanceof URIError) return null;
    throw error;
  }
}
