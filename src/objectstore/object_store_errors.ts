/**
 * Typed object-store errors. Each maps to a class before any retry logic sees it:
 * `retry` (transient), `fail` (non-transient: retried slowly by uploads, never skipped),
 * `not_found`, `not_modified` (a conditional GET's 304), `auth` and `unsupported`. Messages never carry credentials. An error made from
 * another (a transport failure, a disk error) keeps it as its `cause`.
 */
export type ErrorClass = "retry" | "fail" | "not_found" | "not_modified" | "auth" | "unsupported";

export abstract class ObjectStoreError extends Error {
  abstract readonly errorClass: ErrorClass;
  /** HTTP status when the error came from a response. */
  readonly status: number | null;

  constructor(message: string, status: number | null = null, options?: ErrorOptions) {
    super(message, options);
    this.status = status;
  }
}

export class NotFoundError extends ObjectStoreError {
  override name = "NotFoundError";
  readonly errorClass = "not_found";
}

/** A GET with `ifNoneMatch` whose object still has that ETag (S3's 304): nothing to read. */
export class NotModifiedError extends ObjectStoreError {
  override name = "NotModifiedError";
  readonly errorClass = "not_modified";
}

export class PreconditionFailedError extends ObjectStoreError {
  override name = "PreconditionFailedError";
  readonly errorClass = "fail";
}

/** 503 SlowDown and friends: back off and retry. */
export class ThrottledError extends ObjectStoreError {
  override name = "ThrottledError";
  readonly errorClass = "retry";
}

/** Timeouts, connection errors, 5xx: retry. */
export class TransportError extends ObjectStoreError {
  override name = "TransportError";
  readonly errorClass = "retry";
}

export class AuthError extends ObjectStoreError {
  override name = "AuthError";
  readonly errorClass = "auth";
}

/** An answer the client cannot understand, or an unexpected 4xx. */
export class MalformedError extends ObjectStoreError {
  override name = "MalformedError";
  readonly errorClass = "fail";
}

/** A checksum mismatch: the bytes are not what they should be. */
export class CorruptError extends ObjectStoreError {
  override name = "CorruptError";
  readonly errorClass = "fail";
}

/** The store lacks something the server needs (a feature, a bucket). */
export class UnsupportedError extends ObjectStoreError {
  override name = "UnsupportedError";
  readonly errorClass = "unsupported";
}

/** The class of any error: unknown errors (a bug, a crashed body stream) are non-transient. */
export function classify(error: unknown): ErrorClass {
  return error instanceof ObjectStoreError ? error.errorClass : "fail";
}
