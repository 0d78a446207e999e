/**
 * A JSON response: every error answer and the answers of `/health`. The routes' answers go through
 * `encodeResponse` (`body_codec.ts`) in the encoding the request asked for, JSON or msgpack.
 */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** The one error shape of the API: `{error: <code>, message}`. */
export function errorResponse(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return jsonResponse(status, { error: code, message }, headers);
}
