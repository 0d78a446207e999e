import type { Clock } from "../../runtime/clock/clock.ts";
import { SerialQueue } from "../../runtime/cooperation/serial_queue.ts";
import type { Network } from "../../runtime/network/network.ts";
import { topicPartitionOfKey, txnPartitionKey } from "../../transactions/core/txn_state.ts";
import type { MarkerFailure } from "../../transactions/markers/markers_not_written.ts";
import type { RemoteMarkerWriter } from "../../transactions/markers/cluster_marker_writer.ts";
import type { TxnMarkerRequest } from "../../transactions/txn_coordinator.ts";
import { NodeConnection } from "../wire/node_connection.ts";
import { encodeNodeTxnMarkersRequest, readNodeTxnMarkersResponse } from "./node_txn_markers_codec.ts";

/** Marker requests waiting for one link at most; one more fails, and its transaction writes it again. */
export const markerRequestsQueuedMax = 1024;

export interface MarkerLinkDeps {
  network: Network;
  clock: Clock;
  /** "host:port" of the other node's Kafka listener. */
  address: string;
  /** This node's id and credential (`nodeToken`). */
  nodeId: number;
  token: string;
  connectTimeoutMs: number;
  answerTimeoutMs: number;
  maxFrameBytes: number;
}

/** A Kafka error code another node answered for a partition's marker. */
export class MarkerRefusedError extends Error {
  override name = "MarkerRefusedError";
  readonly errorCode: number;

  constructor(partition: string, errorCode: number) {
    super(`Cannot write the transaction marker of ${partition}: its leader answered error code ${errorCode}`);
    this.errorCode = errorCode;
  }
}

/**
 * This node's connection to another node for transaction markers (NodeTxnMarkers): requests one
 * at a time over a `NodeConnection`, in the order they were queued.
 */
export class MarkerLink implements RemoteMarkerWriter {
  readonly #deps: MarkerLinkDeps;
  readonly #connection: NodeConnection;
  readonly #queue: SerialQueue;
  #correlationId = 0;

  constructor(deps: MarkerLinkDeps) {
    this.#deps = deps;
    this.#connection = new NodeConnection(deps);
    this.#queue = new SerialQueue(`the marker link to ${deps.address}`, markerRequestsQueuedMax);
  }

  write(request: TxnMarkerRequest): Promise<MarkerFailure[]> {
    return this.#queue.enqueue(() => this.#send(request));
  }

  async #send(request: TxnMarkerRequest): Promise<MarkerFailure[]> {
    const correlationId = ++this.#correlationId;
    const frame = await this.#connection.exchange(
      encodeNodeTxnMarkersRequest(correlationId, {
        ...request,
        nodeId: this.#deps.nodeId,
        token: this.#deps.token,
        partitions: request.partitions.map(topicPartitionOfKey),
      }),
      this.#deps.answerTimeoutMs,
    );
    const answer = readNodeTxnMarkersResponse(frame);
    if (answer.correlationId !== correlationId || answer.response.refused) {
      this.#connection.reset();
      throw new Error(
        answer.response.refused
          ? `Cannot write transaction markers on ${this.#deps.address}: it refused this node's credentials`
          : `Cannot read transaction markers' answer: correlation id ${answer.correlationId}, not ${correlationId}`,
      );
    }
    return answer.response.partitions.filter((p) => p.errorCode !== 0).map((p) => {
      const partition = txnPartitionKey(p.topic, p.partition);
      return { partition, error: new MarkerRefusedError(partition, p.errorCode) };
    });
  }

  close(): void {
    this.#connection.close();
  }
}
