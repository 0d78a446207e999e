import { assert } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Network, StreamConnection } from "../../runtime/network/network.ts";
import { FrameSplitter } from "./frame_codec.ts";

export interface NodeConnectionDeps {
  network: Network;
  clock: Clock;
  /** "host:port" of the other node's Kafka listener. */
  address: string;
  connectTimeoutMs: number;
  /** Largest answer frame accepted. */
  maxFrameBytes: number;
}

/**
 * A connection from this node to another node's Kafka listener carrying one request at a time: a
 * request frame out, its answer frame back. It is opened on the first exchange and again after one
 * failed; an answer that does not come within its timeout closes it and fails the exchange.
 */
export class NodeConnection {
  readonly #deps: NodeConnectionDeps;
  #connection: StreamConnection | null = null;
  #splitter: FrameSplitter | null = null;
  #pending: Uint8Array[] = [];
  #busy = false;
  #closed = false;

  constructor(deps: NodeConnectionDeps) {
    this.#deps = deps;
  }

  /** Sends `frame` (size field included) and resolves with the answer's frame (after its size field). */
  async exchange(frame: Uint8Array, answerTimeoutMs: number): Promise<Uint8Array> {
    assert(!this.#busy, "one request at a time per node connection");
    assert(!this.#closed, "Cannot send a request: the node connection is closed");
    this.#busy = true;
    try {
      const connection = await this.#connect();
      await connection.write(frame);
      return await this.#nextFrame(connection, answerTimeoutMs);
    } catch (error) {
      this.#drop();
      throw error;
    } finally {
      this.#busy = false;
    }
  }

  /** Closes the connection now; the next exchange opens another (an answer that made no sense). */
  reset(): void {
    this.#drop();
  }

  close(): void {
    this.#closed = true;
    this.#drop();
  }

  async #connect(): Promise<StreamConnection> {
    if (this.#connection !== null) return this.#connection;
    const colon = this.#deps.address.lastIndexOf(":");
    const hostname = this.#deps.address.slice(0, colon);
    const port = Number(this.#deps.address.slice(colon + 1));
    this.#connection = await this.#deps.network.connect({ hostname, port }, this.#deps.connectTimeoutMs);
    // Frames copied out of each read: the connection may read into one buffer again and again.
    this.#splitter = new FrameSplitter(this.#deps.maxFrameBytes, (size) => new Uint8Array(size));
    this.#pending = [];
    return this.#connection;
  }

  /** The next whole frame, or a failure when none comes within `timeoutMs`. */
  async #nextFrame(connection: StreamConnection, timeoutMs: number): Promise<Uint8Array> {
    let timedOut = false;
    const cancel = this.#deps.clock.schedule(timeoutMs, () => {
      timedOut = true;
      connection.close();
    });
    try {
      while (this.#pending.length === 0) {
        const chunk = await connection.read();
        if (chunk === null) {
          throw new Error(
            timedOut ? `no answer within ${timeoutMs} ms` : "the other node closed the connection",
          );
        }
        this.#splitter!.push(chunk, this.#pending);
      }
      return this.#pending.shift()!;
    } finally {
      cancel();
    }
  }

  #drop(): void {
    this.#connection?.close();
    this.#connection = null;
    this.#splitter = null;
    this.#pending = [];
  }
}
