import { cpuUsage } from "node:process";

/**
 * What every client load of bench:peers shares: its arguments, the payloads it sends, the checks the
 * consumer makes of what it reads, and the one JSON line a load prints. A load is a process of its
 * own (`peer_load_nats.ts`, `peer_load_rabbitmq.ts`, `peer_load_kafka.py`, `peer_load_kafkajs.ts`),
 * so that its CPU is apart from the server's.
 *
 * Every payload is `payloadBytes` long: the producer's index (u32, big-endian), its sequence number
 * (u32), then random bytes. Producer `i` writes to partition `i % partitions`, so the consumer can
 * check that each producer's records arrived once each.
 */

export interface LoadArgs {
  mode: "produce" | "consume";
  /** "host:port" (Kafka: a bootstrap list). */
  address: string;
  partitions: number;
  producers: number;
  /** Records each producer has sent and not had acknowledged, at most. */
  window: number;
  /** How long the producers send. */
  seconds: number;
  payloadBytes: number;
  /** Consume: how many records each producer had acknowledged, by producer. */
  acknowledged?: number[];
}

/** What a load prints when it ends. */
export interface LoadResult {
  records: number;
  bytes: number;
  seconds: number;
  /** Produce: from send to acknowledgement. */
  p50Ms?: number;
  p99Ms?: number;
  /** Produce: records acknowledged, by producer. */
  acknowledged?: number[];
  /** The load's own CPU (user + system). */
  cpuMs: number;
}

/** A producer's payloads: its index and sequence number up front, the rest random. */
export class PayloadMaker {
  readonly #template: Uint8Array<ArrayBuffer>;

  constructor(producer: number, payloadBytes: number) {
    this.#template = new Uint8Array(payloadBytes);
    crypto.getRandomValues(
      this.#template.subarray(0, Math.min(payloadBytes, 65_536)) as Uint8Array<ArrayBuffer>,
    );
    new DataView(this.#template.buffer).setUint32(0, producer);
  }

  /** A fresh buffer for sequence number `seq` (clients may hold on to what they are given). */
  make(seq: number): Uint8Array {
    const payload = this.#template.slice();
    new DataView(payload.buffer).setUint32(4, seq);
    return payload;
  }
}

/**
 * The consumer's check: every record each producer had acknowledged is read, none twice, each of the
 * payload's length. Order is not checked: a client with several requests in flight may reorder them.
 * `take` notes one record; `verdict` says what is wrong, or null.
 */
export class RecordCheck {
  /** Per producer, one bit per sequence number seen. */
  readonly #seen: Uint8Array[];
  readonly #expected: number[];
  readonly #payloadBytes: number;
  #problems: string[] = [];
  records = 0;
  bytes = 0;

  /**
   * `acknowledged`: each producer's records acknowledged; `windowRecords`: how many more it may have
   * sent (written, their acknowledgement never seen), so a sequence number past both is wrong.
   */
  constructor(acknowledged: readonly number[], payloadBytes: number, windowRecords: number) {
    this.#expected = [...acknowledged];
    this.#seen = acknowledged.map((n) => new Uint8Array(Math.ceil((n + windowRecords) / 8)));
    this.#payloadBytes = payloadBytes;
  }

  get expectedRecords(): number {
    return this.#expected.reduce((n, x) => n + x, 0);
  }

  take(payload: Uint8Array): void {
    this.records += 1;
    this.bytes += payload.length;
    if (payload.length !== this.#payloadBytes) return this.#problem(`a record of ${payload.length} bytes`);
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    const producer = view.getUint32(0);
    const seq = view.getUint32(4);
    const seen = this.#seen[producer];
    if (seen === undefined) return this.#problem(`a record of producer ${producer}`);
    if (seq >> 3 >= seen.length) return this.#problem(`producer ${producer}: record ${seq}, never sent`);
    const bit = 1 << (seq & 7);
    if ((seen[seq >> 3]! & bit) !== 0) return this.#problem(`producer ${producer}: record ${seq} twice`);
    seen[seq >> 3]! |= bit;
  }

  #problem(text: string): void {
    if (this.#problems.length < 10) this.#problems.push(text);
  }

  verdict(): string | null {
    if (this.#problems.length > 0) return this.#problems.join("; ");
    for (const [producer, expected] of this.#expected.entries()) {
      const seen = this.#seen[producer]!;
      for (let seq = 0; seq < expected; seq++) {
        if ((seen[seq >> 3]! & (1 << (seq & 7))) === 0) return `producer ${producer}: record ${seq} missing`;
      }
    }
    return null;
  }
}

/** Acknowledgement latencies, kept whole (a run is bounded by `seconds` × the rate). */
export class Latencies {
  readonly #values: number[] = [];

  add(ms: number): void {
    this.#values.push(ms);
  }

  percentile(p: number): number {
    if (this.#values.length === 0) return 0;
    const sorted = Float64Array.from(this.#values).sort();
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
  }
}

/** The process's own CPU so far (user and system), in ms. */
/**
 * Runs `args.producers` producers side by side until `args.seconds` have passed, each counting the
 * records it had acknowledged; the result the load reports, with their latencies and this process's CPU.
 */
export async function runProducers(
  args: LoadArgs,
  producer: (index: number, deadline: number, latencies: Latencies) => Promise<number>,
): Promise<LoadResult> {
  const latencies = new Latencies();
  const started = performance.now();
  const deadline = started + args.seconds * 1000;
  const acknowledged = await Promise.all(
    Array.from({ length: args.producers }, (_, i) => producer(i, deadline, latencies)),
  );
  const seconds = (performance.now() - started) / 1000;
  const records = acknowledged.reduce((n, x) => n + x, 0);
  return {
    records,
    bytes: records * args.payloadBytes,
    seconds,
    p50Ms: latencies.percentile(0.5),
    p99Ms: latencies.percentile(0.99),
    acknowledged,
    cpuMs: ownCpuMs(),
  };
}

export function ownCpuMs(): number {
  const { user, system } = cpuUsage();
  return (user + system) / 1000;
}

/** The load's arguments, from its one command-line argument (JSON). */
export function loadArgs(): LoadArgs {
  const text = Deno.args[0];
  if (text === undefined) throw new Error("usage: <load arguments as JSON>");
  return JSON.parse(text) as LoadArgs;
}

/** A producer's window: at most `size` records sent and not acknowledged. */
export class SendWindow {
  readonly #size: number;
  #outstanding = 0;
  #waiter: (() => void) | null = null;
  #drained: (() => void) | null = null;

  constructor(size: number) {
    this.#size = size;
  }

  /** Resolves once one more record may be sent, and counts it. */
  async acquire(): Promise<void> {
    if (this.#outstanding >= this.#size) await new Promise<void>((resolve) => (this.#waiter = resolve));
    this.#outstanding += 1;
  }

  /** A record was acknowledged (or failed). */
  release(): void {
    this.#outstanding -= 1;
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.();
    if (this.#outstanding === 0) this.#drained?.();
  }

  /** Resolves once nothing is outstanding. */
  drained(): Promise<void> {
    if (this.#outstanding === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#drained = resolve));
  }
}
