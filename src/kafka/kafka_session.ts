/**
 * What a Kafka connection serves its frames with: one session per connection (it will hold the
 * connection's authentication), answering each request frame (header and body, without the size
 * field) with the response's pieces (header and body, without the size field), or with null when
 * the request takes no response (a produce with acks 0). A handler that rejects closes the
 * connection: a `KafkaProtocolError` for input that breaks the protocol, anything else for a fault.
 */
export interface KafkaSession {
  handle(frame: Uint8Array): Promise<KafkaResponse | null>;
  /** The connection closed; nothing more will be handled. */
  closed(): void;
}

/**
 * A response's pieces, and what to call once they are written (or the connection failed first): a
 * fetch's pieces are views into cache chunks, given back then.
 */
export interface KafkaResponse {
  pieces: readonly Uint8Array[];
  release?: () => void;
  /** Close the connection once this is written, for this reason (a refused authentication). */
  closeAfter?: string;
}

/** Input that breaks the protocol (malformed, unknown API, refused before authentication). */
export class KafkaProtocolError extends Error {
  override name = "KafkaProtocolError";
  /** A short label for the metric of closed connections, e.g. "malformed" or "unknown_api". */
  readonly reason: string;
  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}
