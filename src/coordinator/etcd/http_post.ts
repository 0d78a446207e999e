import type { Clock } from "../../runtime/clock/clock.ts";

/** The `fetch` the etcd client posts with: the runtime's own, injected by the entry point. */
export type HttpFetch = (
  url: string,
  init: { method: "POST"; headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<Response>;

/** The request options of a JSON POST. */
export function postInit(body: unknown, signal: AbortSignal) {
  return {
    method: "POST" as const,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  };
}

/**
 * How one POST ended: answered (with its status and JSON body), unreached (the connection was
 * refused, so the request surely never arrived), or lost (timed out or cut mid-way: it may
 * have arrived).
 */
export type PostOutcome =
  | { kind: "answered"; status: number; json: Record<string, unknown> }
  | { kind: "unreached"; reason: string }
  | { kind: "lost"; reason: string; cause: unknown };

/** Posts `body` as JSON and reads the JSON answer, all within `timeoutMs`. */
export async function postJson(
  fetch: HttpFetch,
  clock: Clock,
  url: string,
  body: unknown,
  timeoutMs: number,
): Promise<PostOutcome> {
  const controller = new AbortController();
  const cancel = clock.schedule(
    timeoutMs,
    () => controller.abort(new Error(`no answer within ${timeoutMs} ms`)),
  );
  try {
    const response = await fetch(url, postInit(body, controller.signal));
    const text = await response.text();
    return { kind: "answered", status: response.status, json: parseAnswer(text, response.status) };
  } catch (error) {
    if (controller.signal.aborted) {
      return { kind: "lost", reason: `no answer within ${timeoutMs} ms`, cause: error };
    }
    const reason = describe(error);
    return refusedConnection(reason) ? { kind: "unreached", reason } : { kind: "lost", reason, cause: error };
  } finally {
    cancel();
  }
}

function parseAnswer(text: string, status: number): Record<string, unknown> {
  try {
    const json = JSON.parse(text);
    if (json !== null && typeof json === "object" && !Array.isArray(json)) return json;
  } catch (error) {
    // Not JSON: reported below as the status with the text's start, in the caller's typed error.
    if (!(error instanceof SyntaxError)) throw error;
  }
  return { error: `HTTP ${status}: ${text.slice(0, 200)}`, message: `HTTP ${status}: ${text.slice(0, 200)}` };
}

/** The error's message with its causes', which is where fetch puts the system's reason. */
function describe(error: unknown): string {
  const parts: string[] = [];
  let at: unknown = error;
  for (let depth = 0; depth < 4 && at instanceof Error; depth++) {
    const code = (at as { code?: unknown }).code;
    parts.push(typeof code === "string" ? `${at.message} (${code})` : at.message);
    at = at.cause;
  }
  return parts.length === 0 ? String(error) : parts.join(": ");
}

/** A refused or unroutable connection: the request never left this process. */
function refusedConnection(reason: string): boolean {
  return /ECONNREFUSED|Connection refused|EHOSTUNREACH|ENETUNREACH|ENOTFOUND/i.test(reason);
}
