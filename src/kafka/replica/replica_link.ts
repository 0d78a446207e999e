import type {
  LeaderLink,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from "../../cluster/replication/replica_fetch.ts";
import { assert } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Network, StreamConnection } from "../../runtime/network/network.ts";
import { FrameSplitter } from "../wire/frame_codec.ts";
import { encodeReplicaFetchRequest, readReplicaFetchResponse } from "./replica_fetch_codec.ts";

export interface ReplicaLinkDeps {
  network: Network;
  clock: Clock;
  /** "host:port" of the leader's Kafka listener. */
  address: string;
  /** This node's credential (`nodeToken`). */
  token: string;
  connectTimeoutMs: number;
  /** Beyond a fetch's own wait: how long its answer may take before the link gives up on it. */
  answerTimeoutMs: number;
  /** Largest answer frame accepted. */
  maxFrameBytes: number;
}

/**
 * A follower's connection to one leader's Kafka listener carrying ReplicaFetch requests, one at a
 * time. The connection is opened on the first fetch and again after it failed; a fetch whose answer
 * does not come within its wait plus `answerTimeoutMs` closes it and fails.
 */
export class ReplicaLink implements LeaderLink {
  readonly #deps: ReplicaLinkDeps;
  #connection: StreamConnection | null = null;
  #splitter: FrameSplitter | null = null;
  #pending: Uint8Array[] = [];
  #correlationId = 0;
  #busy = false;
  #closed = false;

  constructor(deps: ReplicaLinkDeps) {
    this.#deps = deps;
  }

  async fetch(request: ReplicaFetchRequest): Promise<ReplicaFetchResponse> {
    assert(!this.#busy, "one replica fetch at a time per link");
    assert(!this.#closed, "Cannot fetch: the link is closed");
    this.#busy = true;
    try {
      const connection = await this.#connect();
      const correlationId = ++this.#correlationId;
      await connection.write(
        encodeReplicaFetchRequest(correlationId, { ...request, token: this.#deps.token }),
      );
      const frame = await this.#nextFrame(connection, request.maxWaitMs + this.#deps.answerTimeoutMs);
      const answer = readReplicaFetchResponse(frame);
      if (answer.correlationId !== correlationId) {
        throw new Error(
          `Cannot read a replica fetch's answer: correlation id ${answer.correlationId}, not ${correlationId}`,
        );
      }
      return answer.response;
    } catch (error) {
      this.#drop();
      throw error;
    } finally {
      this.#busy = false;
    }
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
          throw new Error(timedOut ? `no answer within ${timeoutMs} ms` : "the leader closed the connection");
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
