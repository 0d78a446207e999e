import type {
  LeaderLink,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from "../../cluster/replication/replica_fetch.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Network } from "../../runtime/network/network.ts";
import { NodeConnection } from "../wire/node_connection.ts";
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
 * time (`NodeConnection`): a fetch whose answer does not come within its wait plus
 * `answerTimeoutMs` closes the connection and fails.
 */
export class ReplicaLink implements LeaderLink {
  readonly #deps: ReplicaLinkDeps;
  readonly #connection: NodeConnection;
  #correlationId = 0;

  constructor(deps: ReplicaLinkDeps) {
    this.#deps = deps;
    this.#connection = new NodeConnection(deps);
  }

  async fetch(request: ReplicaFetchRequest): Promise<ReplicaFetchResponse> {
    const correlationId = ++this.#correlationId;
    const frame = await this.#connection.exchange(
      encodeReplicaFetchRequest(correlationId, { ...request, token: this.#deps.token }),
      request.maxWaitMs + this.#deps.answerTimeoutMs,
    );
    const answer = readReplicaFetchResponse(frame);
    if (answer.correlationId !== correlationId) {
      this.#connection.reset();
      throw new Error(
        `Cannot read a replica fetch's answer: correlation id ${answer.correlationId}, not ${correlationId}`,
      );
    }
    return answer.response;
  }

  close(): void {
    this.#connection.close();
  }
}
