/**
 * Errors the HTTP layer maps to status codes. Each carries the API's error code; the message
 * follows the "Cannot <do X>: <reason>" form and never holds a secret.
 */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const badRequest = (code: string, message: string) => new ApiError(400, code, message);
export const notFound = (message: string) => new ApiError(404, "not_found", message);
export const conflict = (code: string, message: string) => new ApiError(409, code, message);
export const unavailable = (code: string, message: string, retryAfterSeconds = 1) =>
  new ApiError(503, code, message, { "retry-after": String(retryAfterSeconds) });
