/**
 * Errors the HTTP layer maps to status codes. Each carries the API's error code; the message
 * follows the "Cannot <do X>: <reason>" form and never holds a secret. The error it was made from,
 * if any, is its `cause`, for logs and tests only: the answer's body holds the code and the message,
 * never the cause.
 */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const badRequest = (code: string, message: string, options?: ErrorOptions) =>
  new ApiError(400, code, message, {}, options);
export const notFound = (message: string, options?: ErrorOptions) =>
  new ApiError(404, "not_found", message, {}, options);
export const conflict = (code: string, message: string, options?: ErrorOptions) =>
  new ApiError(409, code, message, {}, options);
export const unavailable = (code: string, message: string, retryAfterSeconds = 1, options?: ErrorOptions) =>
  new ApiError(503, code, message, { "retry-after": String(retryAfterSeconds) }, options);

/**
 * A coordinator's refusal that says where the key is served (groups', transactions'): 421 when
 * another node coordinates it, 503 while it loads or cannot be served; null for any other error.
 */
export function coordinatorRefusal(error: string, message: string): ApiError | null {
  if (error === "not_coordinator") return new ApiError(421, error, `${message}; another node coordinates it`);
  if (error === "coordinator_load_in_progress" || error === "coordinator_not_available") {
    return unavailable(error, message);
  }
  return null;
}

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
