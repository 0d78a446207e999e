import { setTransactional } from "../../log/batch/producer_fields.ts";
import type { Rng } from "../../runtime/rng.ts";
import { streamName, topicName } from "./cluster_settings.ts";
import { idempotentAttemptsMax, producerBatch } from "./idempotent_producer.ts";
import type { ClusterWorld, PendingProduce } from "./cluster_world.ts";

/** The simulated transactional producer's id (the idempotent producer's is 1). */
const txnProducerId = 2;
/** Batches one transaction writes, at most. */
const batchesPerTxnMax = 3;
/** Chance that a transaction whose every batch was acknowledged ends with a commit. */
const commitChance = 0.7;

/** What the transactional producer's current transaction has done. */
interface SimTxn {
  no: number;
  /** Batches it will write; each is one record. */
  batches: number;
  /** Values of its batches sent so far, the last one possibly in flight. */
  values: string[];
  /** Values acknowledged. */
  acked: number;
  /** A batch was given up after `idempotentAttemptsMax` sends: the transaction can only abort. */
  gaveUp: boolean;
  /** Decided once every batch is acknowledged or one given up. */
  outcome: "commit" | "abort" | null;
  topicLife: number;
}

/** A send whose answer has not come: to which node, in which of its lives. */
interface Sending {
  nodeId: number;
  life: number;
}

/**
 * A transactional producer and, for its one partition, its coordinator's part: each transaction
 * writes 1 to `batchesPerTxnMax` transactional batches (sent again, the same bytes, after a
 * refusal or a timeout, as the idempotent producer does), then a COMMIT marker (when every batch
 * was acknowledged, by the seed's chance) or an ABORT marker, written to the partition's leader of
 * the moment and again after any failure until acknowledged, as the coordinator writes markers. A
 * transaction that gave a batch up aborts and the producer's epoch is bumped, as a coordinator
 * fences a producer whose transaction it aborts. Each value's outcome goes to the run's promises
 * once its marker is acknowledged: the read-backs check atomic visibility against them.
 */
export class TransactionalSimProducer {
  #epoch = 0;
  #nextSequence = 0;
  #txns = 0;
  #current: SimTxn | null = null;
  #inFlight: { bytes: Uint8Array; attempts: number } | null = null;
  #sending: Sending | null = null;

  /** No transaction is open: every batch written has its marker. */
  settled(): boolean {
    return this.#current === null || this.#current.values.length === 0;
  }

  /** One step: a new transaction, a send of its next batch, or of its marker; nothing while a send is out. */
  step(w: ClusterWorld, rng: Rng, acknowledged: (p: PendingProduce, offset: number) => void): void {
    if (w.partition === null) return;
    if (this.#sending !== null) {
      if (w.node(this.#sending.nodeId).life?.no === this.#sending.life) return;
      w.record(`transactional: node ${this.#sending.nodeId} died with a send; sent again`);
      this.#sending = null;
    }
    const txn = this.#current?.topicLife === w.topicLife ? this.#current : this.#begin(w, rng);
    if (txn.outcome === null && txn.acked === txn.batches) {
      txn.outcome = rng.chance(commitChance) ? "commit" : "abort";
    }
    if (txn.outcome === null && txn.gaveUp) txn.outcome = "abort";
    if (txn.outcome !== null) return this.#sendMarker(w, txn);
    this.#sendBatch(w, txn, acknowledged);
  }

  #begin(w: ClusterWorld, rng: Rng): SimTxn {
    if (this.#current !== null && this.#current.topicLife !== w.topicLife) {
      // The topic was deleted and made again: a new partition, which knows no producer.
      this.#bump();
    }
    const no = this.#txns++;
    this.#current = {
      no,
      batches: rng.int(1, batchesPerTxnMax),
      values: [],
      acked: 0,
      gaveUp: false,
      outcome: null,
      topicLife: w.topicLife,
    };
    w.record(`transactional: t${no} begins at epoch ${this.#epoch}`);
    return this.#current;
  }

  #bump(): void {
    this.#epoch++;
    this.#nextSequence = 0;
    this.#inFlight = null;
  }

  #sendBatch(w: ClusterWorld, txn: SimTxn, acknowledged: (p: PendingProduce, offset: number) => void): void {
    const leader = w.leader();
    const life = leader?.life;
    if (leader === null || life === null || life === undefined) return;
    if (this.#inFlight === null) {
      const value = `t${txn.no}.${txn.values.length}`;
      txn.values.push(value);
      this.#inFlight = { bytes: this.#batch(value), attempts: 0 };
    }
    const batch = this.#inFlight;
    if (batch.attempts >= idempotentAttemptsMax) {
      w.record(`transactional: t${txn.no} gave a batch up after ${batch.attempts} sends`);
      txn.gaveUp = true;
      return;
    }
    batch.attempts++;
    const sending = { nodeId: leader.id, life: life.no };
    this.#sending = sending;
    const value = txn.values[txn.values.length - 1]!;
    const pending = w.addPending(value, leader, life.no);
    life.broker.dataPlane.produceBatches(streamName, topicName, 0, batch.bytes, -1).then(
      (result) => {
        acknowledged(pending, result.baseOffset);
        if (this.#inFlight === batch) {
          this.#inFlight = null;
          txn.acked++;
        }
      },
      (error) =>
        w.record(`transactional ${value} to node ${pending.nodeId} refused: ${(error as Error).name}`),
    ).finally(() => {
      w.pending.delete(pending);
      if (this.#sending === sending) this.#sending = null;
    });
  }

  #sendMarker(w: ClusterWorld, txn: SimTxn): void {
    const leader = w.leader();
    const life = leader?.life;
    if (leader === null || life === null || life === undefined) return;
    const sending = { nodeId: leader.id, life: life.no };
    this.#sending = sending;
    const commit = txn.outcome === "commit";
    const marker = {
      producerId: txnProducerId,
      epoch: this.#epoch,
      commit,
      coordinatorEpoch: 0,
      timestampMs: Math.floor(w.clock.wallMs()),
    };
    life.broker.dataPlane.writeTxnMarker(streamName, topicName, 0, marker).then(
      (offset) => {
        if (this.#current !== txn) return;
        w.record(`transactional: t${txn.no} ${txn.outcome} marker at ${offset} by node ${leader.id}`);
        if (txn.topicLife === w.topicLife) {
          for (const value of txn.values) w.promises.txnOutcomes.set(value, txn.outcome!);
        }
        this.#current = null;
        if (txn.gaveUp) this.#bump();
      },
      (error) =>
        w.record(`transactional t${txn.no} marker to node ${leader.id} refused: ${(error as Error).name}`),
    ).finally(() => {
      if (this.#sending === sending) this.#sending = null;
    });
  }

  #batch(value: string): Uint8Array {
    const bytes = producerBatch(value, txnProducerId, this.#epoch, this.#nextSequence++);
    setTransactional(bytes);
    return bytes;
  }
}
