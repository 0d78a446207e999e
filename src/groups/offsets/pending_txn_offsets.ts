import type { TxnOffsetRecord } from "./offsets_records.ts";

/** One producer's offsets pending in its open transaction, by group, then by `topic:partition`. */
interface PendingOfProducer {
  epoch: number;
  groups: Map<string, Map<string, TxnOffsetRecord>>;
}

/**
 * The offsets transactional producers committed (TxnOffsetCommit) on one partition of
 * `__consumer_offsets`, pending until their transactions end: a commit marker makes them committed
 * offsets, an abort drops them (Kafka's pending transactional offsets). At most `pendingMax`
 * offsets are held; one more is refused by the caller (`wouldExceed`).
 */
export class PendingTxnOffsets {
  readonly #pendingMax: number;
  readonly #producers = new Map<number, PendingOfProducer>();
  #count = 0;

  constructor(pendingMax: number) {
    this.#pendingMax = pendingMax;
  }

  /** Gauge: offsets pending. */
  get size(): number {
    return this.#count;
  }

  /** The epoch of the producer's pending offsets, or null when it has none. */
  epochOf(producerId: number): number | null {
    return this.#producers.get(producerId)?.epoch ?? null;
  }

  /** Whether adding `count` offsets would pass the bound (an offset already pending is replaced, counted here). */
  wouldExceed(count: number): boolean {
    return this.#count + count > this.#pendingMax;
  }

  /** A transactional offset, pending; a newer epoch's replaces what an older one held. */
  add(record: TxnOffsetRecord): void {
    let producer = this.#producers.get(record.producerId);
    if (producer === undefined || producer.epoch < record.epoch) {
      if (producer !== undefined) this.#count -= countOf(producer);
      producer = { epoch: record.epoch, groups: new Map() };
      this.#producers.set(record.producerId, producer);
    }
    let group = producer.groups.get(record.groupId);
    if (group === undefined) producer.groups.set(record.groupId, group = new Map());
    const key = `${record.topic}:${record.partition}`;
    if (!group.has(key)) this.#count++;
    group.set(key, record);
  }

  /** Takes the producer's pending offsets away (its transaction ended), in the order they came. */
  take(producerId: number): TxnOffsetRecord[] {
    const producer = this.#producers.get(producerId);
    if (producer === undefined) return [];
    this.#producers.delete(producerId);
    this.#count -= countOf(producer);
    return [...producer.groups.values()].flatMap((group) => [...group.values()]);
  }

  /** Whether any producer has an offset of the group's partition pending. */
  has(groupId: string, topic: string, partition: number): boolean {
    const key = `${topic}:${partition}`;
    // Bounded by the producers with pending offsets.
    for (const producer of this.#producers.values()) if (producer.groups.get(groupId)?.has(key)) return true;
    return false;
  }

  /** Every pending offset, for a checkpoint. */
  records(): TxnOffsetRecord[] {
    return [...this.#producers.values()].flatMap((p) =>
      [...p.groups.values()].flatMap((g) => [...g.values()])
    );
  }
}

function countOf(producer: PendingOfProducer): number {
  let n = 0;
  for (const group of producer.groups.values()) n += group.size;
  return n;
}
