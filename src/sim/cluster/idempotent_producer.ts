import { encodeRecordBatch } from "../../log/batch/record_batch.ts";
import { stampProducer } from "../../log/batch/producer_fields.ts";
import { streamName, topicName } from "./cluster_settings.ts";
import type { ClusterWorld, PendingProduce } from "./cluster_world.ts";

/** The simulated idempotent producer's id: the run has one such producer. */
const simProducerId = 1;

/**
 * Sends of one batch before the producer gives it up and bumps its epoch (a client's delivery
 * timeout): a batch never appended then leaves no gap its successors would be refused for.
 */
export const idempotentAttemptsMax = 40;

/** The batch the idempotent producer sends until it is acknowledged, one at a time. */
interface InFlightBatch {
  value: string;
  bytes: Uint8Array;
  attempts: number;
  /** A send of it whose answer has not come: to which node, in which of its lives. */
  sending: { nodeId: number; life: number } | null;
}

/**
 * A Kafka idempotent producer as the simulated workload runs one: each value is one batch with the
 * next sequence number, sent with acks=all to the node leading under the highest epoch and sent
 * again, the same bytes, after a refusal or a timeout, until acknowledged. A retry of a batch the
 * old leader appended and replicated is answered with the offset it was first given; the read-back
 * then finds every value once (`noValueTwice`).
 */
export class IdempotentSimProducer {
  #epoch = 0;
  #nextSequence = 0;
  #inFlight: InFlightBatch | null = null;
  #sent = 0;

  /** One step: a new batch when none is in flight, or a send of the one in flight when none is out. */
  step(w: ClusterWorld, acknowledged: (p: PendingProduce, offset: number) => void): void {
    if (w.partition === null) return;
    const batch = this.#inFlight ?? this.#next();
    if (batch.sending !== null) {
      // A process that died with the send never answers it: its answer is lost, and the batch
      // goes again, as a client sends it again when its connection drops.
      if (w.node(batch.sending.nodeId).life?.no === batch.sending.life) return;
      w.record(`idempotent ${batch.value}: node ${batch.sending.nodeId} died with it; sent again`);
      batch.sending = null;
    }
    const leader = w.leader();
    const life = leader?.life;
    if (leader === null || life === null || life === undefined) return;
    if (batch.attempts >= idempotentAttemptsMax) {
      w.record(`idempotent ${batch.value} given up after ${batch.attempts} sends; epoch ${this.#epoch + 1}`);
      this.#epoch++;
      this.#nextSequence = 0;
      this.#inFlight = null;
      return;
    }
    batch.attempts++;
    const sending = { nodeId: leader.id, life: life.no };
    batch.sending = sending;
    const pending = w.addPending(batch.value, leader, life.no);
    life.broker.dataPlane.produceBatches(streamName, topicName, 0, batch.bytes, -1).then(
      (result) => {
        acknowledged(pending, result.baseOffset);
        if (this.#inFlight === batch) this.#inFlight = null;
      },
      (error) =>
        w.record(`idempotent ${batch.value} to node ${pending.nodeId} refused: ${(error as Error).name}`),
    ).finally(() => {
      w.pending.delete(pending);
      if (batch.sending === sending) batch.sending = null;
    });
  }

  #next(): InFlightBatch {
    const value = `i${this.#sent++}`;
    const bytes = producerBatch(value, simProducerId, this.#epoch, this.#nextSequence++);
    this.#inFlight = { value, bytes, attempts: 0, sending: null };
    return this.#inFlight;
  }
}

/** A batch of one record, `value`, of producer `producerId` at `epoch` and `sequence`. */
export function producerBatch(
  value: string,
  producerId: number,
  epoch: number,
  sequence: number,
): Uint8Array {
  const bytes = encodeRecordBatch([{
    offsetDelta: 0,
    timestampDelta: 0,
    key: null,
    value: new TextEncoder().encode(value),
    headers: [],
  }], {
    baseOffset: 0,
    baseTimestampMs: 1_700_000_000_000,
    maxTimestampMs: 1_700_000_000_000,
    timestampType: "create_time",
  });
  stampProducer(bytes, producerId, epoch, sequence);
  return bytes;
}
