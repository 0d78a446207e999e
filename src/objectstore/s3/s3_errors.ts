import {
  AuthError,
  CorruptError,
  MalformedError,
  NotFoundError,
  NotModifiedError,
  type ObjectStoreError,
  PreconditionFailedError,
  ThrottledError,
  TransportError,
  UnsupportedError,
} from "../object_store_errors.ts";

/** S3 error codes that mean the request's bytes did not match their checksum. */
const checksumCodes = new Set([
  "BadDigest",
  "InvalidDigest",
  "XAmzContentChecksumMismatch",
  "XAmzContentSHA256Mismatch",
]);
const authCodes = new Set([
  "AccessDenied",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
  "InvalidToken",
]);

/**
 * Maps an S3 error response to a typed error. `what` is "Cannot <op> <key>"; the S3 message is
 * included (it never holds the client's credentials), the code always.
 */
export function mapS3Error(what: string, status: number, code: string, message: string): ObjectStoreError {
  const detail = `${what}: ${status}${code ? ` ${code}` : ""}${message ? ` (${message})` : ""}`;
  if (status === 503 || code === "SlowDown" || code === "RequestLimitExceeded") {
    return new ThrottledError(detail, status);
  }
  if (status >= 500) return new TransportError(detail, status);
  if (status === 304) return new NotModifiedError(detail, status);
  if (status === 412 || code === "PreconditionFailed") return new PreconditionFailedError(detail, status);
  if (status === 404 && code === "NoSuchBucket") return new UnsupportedError(detail, status);
  if (status === 404) return new NotFoundError(detail, status);
  if (status === 403 || status === 401 || authCodes.has(code)) return new AuthError(detail, status);
  if (checksumCodes.has(code)) return new CorruptError(detail, status);
  // 409 on a conditional write races another writer; retrying resolves it one way or the other.
  if (status === 409 && code === "ConditionalRequestConflict") return new ThrottledError(detail, status);
  if (status === 408) return new TransportError(detail, status);
  return new MalformedError(detail, status);
}
