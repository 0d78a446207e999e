import { ResourceNotFoundError } from "../../broker/broker_errors.ts";
import type { DataPlane } from "../../broker/data_plane.ts";
import { ProducerRefusedError } from "../../log/log_errors.ts";
import { isBug } from "../../runtime/assert.ts";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { Logger } from "../../runtime/logger.ts";
import type { TxnMarkerRequest, TxnMarkerWriter } from "../txn_coordinator.ts";
import { topicPartitionOfKey } from "../core/txn_state.ts";
import { type MarkerFailure, MarkersNotWrittenError } from "./markers_not_written.ts";

/** A partition whose markers go to its coordinator rather than to its log (`__consumer_offsets`'s). */
export interface CoordinatedMarkers {
  topicName: string;
  /** The transaction's end, applied to what the coordinator holds pending of the producer there. */
  write(partition: number, marker: { producerId: number; epoch: number; commit: boolean }): Promise<void>;
}

export interface LocalMarkerWriterDeps {
  data: DataPlane;
  /** The internal topic whose markers its coordinator takes; null: none. */
  coordinated: CoordinatedMarkers | null;
  /** The Kafka stream, which holds the partitions. */
  streamName: string;
  clock: Clock;
  logger: Logger;
}

/**
 * Writes a transaction's markers through this node's data plane, every partition at once (a
 * transaction holds at most `partitions_per_transaction_max`; a partition of `__consumer_offsets`
 * goes to its group coordinator, which commits or drops the producer's pending offsets there
 * instead): each acknowledged once its in-sync
 * replicas hold it. A partition whose topic is gone is done, as Kafka takes a partition with no
 * leader for deleted; one whose producer is at a newer epoch already is done too (a newer
 * coordinator fenced it, Kafka's INVALID_PRODUCER_EPOCH), and so is one whose producer's markers
 * come from a newer coordinator (Kafka's TRANSACTION_COORDINATOR_FENCED): this one is stale. The rest that failed are named by
 * `MarkersNotWrittenError`, and only they are written again.
 */
export class LocalMarkerWriter implements TxnMarkerWriter {
  readonly #deps: LocalMarkerWriterDeps;

  constructor(deps: LocalMarkerWriterDeps) {
    this.#deps = deps;
  }

  async write(request: TxnMarkerRequest): Promise<void> {
    const failures = await this.writeEach(request);
    if (failures.length > 0) throw new MarkersNotWrittenError(failures);
  }

  /** Writes the markers of `request.partitions`, all of them led here; resolves with those that failed. */
  async writeEach(request: TxnMarkerRequest): Promise<MarkerFailure[]> {
    const { data, streamName, clock } = this.#deps;
    const { producerId, epoch, commit, coordinatorEpoch } = request;
    const marker = { producerId, epoch, commit, coordinatorEpoch, timestampMs: Math.floor(clock.wallMs()) };
    const failures: MarkerFailure[] = [];
    await Promise.all(request.partitions.map(async (key) => {
      const { topic, partition } = topicPartitionOfKey(key);
      try {
        const coordinated = this.#deps.coordinated;
        if (coordinated !== null && topic === coordinated.topicName) {
          await coordinated.write(partition, { producerId, epoch, commit });
        } else {
          await data.writeTxnMarker(streamName, topic, partition, marker);
        }
      } catch (error) {
        if (isBug(error)) throw error;
        if (error instanceof ResourceNotFoundError) return;
        if (error instanceof ProducerRefusedError && error.refusal === "old_epoch") {
          this.#deps.logger.warn("transaction marker refused: its producer is at a newer epoch", {
            partition: key,
            error,
          });
          return;
        }
        if (error instanceof ProducerRefusedError && error.refusal === "coordinator_fenced") {
          this.#deps.logger.warn(
            "transaction marker refused: a newer coordinator wrote the producer's markers",
            {
              partition: key,
              error,
            },
          );
          return;
        }
        failures.push({ partition: key, error });
      }
    }));
    return failures;
  }
}
