import type { Registry } from "prom-client";
import type { Pump } from "../runtime/pump.ts";
import { errorResponse, jsonResponse } from "./json_response.ts";

export type FetchHandler = (request: Request) => Promise<Response>;

export interface HttpHandlerDeps {
  registry: Registry;
  pumps: readonly Pump[];
}

/**
 * The HTTP API as a fetch-style function, served by `Deno.serve` in the entry point and called
 * directly by tests under Node, without a socket. Bad input never reaches a 500: unknown paths
 * get 404 and wrong methods 405, both with the JSON error body.
 */
export function createHttpHandler(deps: HttpHandlerDeps): FetchHandler {
  return async (request) => {
    const url = new URL(request.url);
    const route = routes[url.pathname];
    if (route === undefined) {
      return errorResponse(404, "not_found", `Cannot ${request.method} ${url.pathname}: no such endpoint`);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return errorResponse(405, "method_not_allowed", `Cannot ${request.method} ${url.pathname}: use GET`, {
        allow: "GET, HEAD",
      });
    }
    return await route(deps);
  };
}

const routes: Record<string, (deps: HttpHandlerDeps) => Promise<Response>> = {
  "/metrics": async ({ registry }) =>
    new Response(await registry.metrics(), {
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
