/**
 * The store could not be reached or did not answer in time. `ambiguous` is true for a write whose
 * request may have reached the store: it may or may not have applied, so the caller re-reads
 * before deciding (a compare makes a retry safe).
 */
export class CoordinatorUnavailableError extends Error {
  override name = "CoordinatorUnavailableError";
  readonly ambiguous: boolean;
  constructor(message: string, ambiguous: boolean, options?: ErrorOptions) {
    super(message, options);
    this.ambiguous = ambiguous;
  }
}

/**
 * The store's answer is not what its protocol says (a field of the wrong type, a count that does not
 * match the request, a streamed line over its bound): a failure of what came back, not a bug here.
 */
export class CoordinatorAnswerError extends Error {
  override name = "CoordinatorAnswerError";
}

/** The store refused the request as malformed or too large: retrying it cannot help. */
export class CoordinatorRequestError extends Error {
  override name = "CoordinatorRequestError";
}

/** The lease expired or was revoked: keys bound to it are gone. */
export class LeaseNotFoundError extends Error {
  override name = "LeaseNotFoundError";
  readonly leaseId: string;
  constructor(leaseId: string) {
    super(`Cannot keep lease ${leaseId} alive: it has expired or was revoked`);
    this.leaseId = leaseId;
  }
}

/** A watch asked for history the store has compacted away. */
export class CompactedError extends Error {
  override name = "CompactedError";
  readonly compactRevision: number;
  constructor(fromRevision: number, compactRevision: number) {
    super(
      `Cannot watch from revision ${fromRevision}: the store has compacted its history up to ${compactRevision}`,
    );
    this.compactRevision = compactRevision;
  }
}
