/**
 * Stream sockets as the server sees them, so that listeners run on any runtime and in tests: the
 * entry point passes one made of `Deno.listen`, tests one made of `node:net` (`NodeNetwork`).
 */

export interface ListenAddress {
  hostname: string;
  port: number;
}

/** One accepted connection: a byte stream each way. */
export interface StreamConnection {
  /** "host:port" of the peer, for log lines. */
  readonly remoteAddress: string;
  /**
   * The next bytes received; null once the peer has closed its side or the connection was closed.
   * The bytes are the caller's until its next `read` only: a connection may read into one buffer
   * again and again. Rejects on a connection error.
   */
  read(): Promise<Uint8Array | null>;
  /** Writes every byte of `bytes`; resolves once they are handed to the system. */
  write(bytes: Uint8Array): Promise<void>;
  /** Closes both sides; pending reads resolve with null. Closing twice is harmless. */
  close(): void;
}

export interface StreamListener {
  /** Where it listens, with the port chosen when port 0 was asked for. */
  readonly address: ListenAddress;
  /** The next connection; null once the listener is closed. */
  accept(): Promise<StreamConnection | null>;
  /** Stops accepting; a pending accept resolves with null. */
  close(): void;
}

export interface Network {
  listen(address: ListenAddress): Promise<StreamListener>;
  /** Opens a connection to `address`; rejects when it cannot be made within `timeoutMs`. */
  connect(address: ListenAddress, timeoutMs: number): Promise<StreamConnection>;
}
