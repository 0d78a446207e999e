import { connect, type Socket } from "node:net";
import { FrameSplitter, isFlexible } from "../../../src/kafka/wire/frame_codec.ts";
import { KafkaReader, KafkaWriter } from "../../../src/kafka/wire/kafka_codec.ts";
import type { StreamConnection } from "../../../src/runtime/network/network.ts";
import { realTime, waitFor } from "../wait_for.ts";

/** A request as a client writes it on the wire: size field, header (v1 or v2) and body. */
export function kafkaRequest(
  api: number,
  version: number,
  correlationId: number,
  body: (w: KafkaWriter) => void = () => {},
  clientId: string | null = "strata-test",
): Uint8Array {
  const w = new KafkaWriter(64 * 1024 * 1024);
  w.int32(0).int16(api).int16(version).int32(correlationId).nullableString(clientId);
  if (isFlexible(api, version)) w.emptyTaggedFields();
  body(w);
  const frame = w.bytes().slice();
  new DataView(frame.buffer).setInt32(0, frame.length - 4);
  return frame;
}

/** A Kafka connection from a test: writes request frames, reads response frames in order. */
export class KafkaWireClient {
  readonly #socket: Socket;
  readonly #splitter = new FrameSplitter(256 * 1024 * 1024);
  readonly #frames: Uint8Array[] = [];
  #waiter: (() => void) | null = null;
  #closed = false;
  /** The pace of its waits: a check as soon as bytes arrive or the socket closes, and every 100 ms. */
  readonly #woken = realTime(100, () => new Promise<void>((resolve) => (this.#waiter = resolve)));

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.#frames.push(...this.#splitter.push(new Uint8Array(chunk).slice()));
      this.#wake();
    });
    socket.on("close", () => {
      this.#closed = true;
      this.#wake();
    });
    socket.on("error", () => {});
  }

  static connect(port: number, host = "127.0.0.1"): Promise<KafkaWireClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host }, () => resolve(new KafkaWireClient(socket)));
      socket.once("error", reject);
    });
  }

  send(frame: Uint8Array): void {
    this.#socket.write(frame);
  }

  /** The next response frame (correlation id first), or null once the server closed the connection. */
  async next(deadlineMs = 10_000): Promise<KafkaReader | null> {
    await waitFor("a Kafka response", () => this.#frames.length > 0 || this.#closed, {
      deadlineMs,
      pace: this.#woken,
    });
    const frame = this.#frames.shift();
    return frame === undefined ? null : new KafkaReader(frame);
  }

  /** Resolves once the server has closed the connection; rejects after `deadlineMs`. */
  async closedByServer(deadlineMs = 10_000): Promise<void> {
    await waitFor("the server to close the connection", () => this.#closed, {
      deadlineMs,
      pace: this.#woken,
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.();
  }
}

/** A `StreamConnection` in memory: the test delivers bytes and reads what was written. */
export class MemoryConnection implements StreamConnection {
  readonly remoteAddress = "memory:1";
  readonly written: Uint8Array[] = [];
  #incoming: (Uint8Array | null)[] = [];
  #reader: (() => void) | null = null;
  #closed = false;
  #writeWaiters: (() => void)[] = [];

  get closed(): boolean {
    return this.#closed;
  }

  deliver(bytes: Uint8Array | null): void {
    this.#incoming.push(bytes);
    this.#wakeReader();
  }

  async read(): Promise<Uint8Array | null> {
    while (this.#incoming.length === 0 && !this.#closed) {
      await new Promise<void>((resolve) => (this.#reader = resolve));
    }
    if (this.#closed) return null;
    return this.#incoming.shift() ?? null;
  }

  write(bytes: Uint8Array): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("closed"));
    this.written.push(bytes.slice());
    for (const wake of this.#writeWaiters.splice(0)) wake();
    return Promise.resolve();
  }

  close(): void {
    this.#closed = true;
    this.#wakeReader();
  }

  /** The response frames written so far, each without its size field. */
  frames(): Uint8Array[] {
    const splitter = new FrameSplitter(256 * 1024 * 1024);
    return this.written.flatMap((w) => splitter.push(w));
  }

  #wakeReader(): void {
    const reader = this.#reader;
    this.#reader = null;
    reader?.();
  }
}

/** A Metadata response (v1 to v8) as a client reads it, after the correlation id. */
export function readMetadataAnswer(r: KafkaReader, version: number) {
  if (version >= 3) r.int32();
  const brokers = r.array((b) => ({
    nodeId: b.int32(),
    host: b.string(),
    port: b.int32(),
    rack: b.nullableString(),
  }));
  const clusterId = version >= 2 ? r.nullableString() : null;
  const controllerId = r.int32();
  const topics = r.array((tr) => {
    const errorCode = tr.int16();
    const name = tr.string();
    tr.boolean();
    const partitions = tr.array((p) => {
      const partition = { errorCode: p.int16(), index: p.int32(), leader: p.int32() };
      if (version >= 7) p.int32();
      const replicas = p.array((x) => x.int32());
      const isr = p.array((x) => x.int32());
      if (version >= 5) p.array((x) => x.int32());
      return { ...partition, replicas, isr };
    });
    if (version >= 8) tr.int32();
    return { errorCode, name, partitions };
  });
  if (version >= 8) r.int32();
  return { brokers, clusterId, controllerId, topics };
}

/** The body of a Metadata request (v1 to v8) for `topics` (null: every topic). */
export function metadataBody(version: number, topics: string[] | null, allowCreate = true) {
  return (w: KafkaWriter) => {
    if (topics === null) w.int32(-1);
    else w.array(topics, (x, name) => x.nullableString(name));
    if (version >= 4) w.boolean(allowCreate);
    if (version >= 8) w.boolean(false).boolean(false);
  };
}

/** The body of a Produce v3+ request: one topic, one partition, `records` (acks as given). */
export function produceBody(topic: string, partition: number, records: Uint8Array, acks = 1) {
  return (w: KafkaWriter) => {
    w.nullableString(null).int16(acks).int32(10_000);
    w.array([0], (x) => {
      x.nullableString(topic);
      x.array([0], (p) => p.int32(partition).nullableBytes(records));
    });
  };
}

/** A Produce v3 to v7 response of one topic and partition, after the correlation id. */
export function readProduceAnswer(r: KafkaReader, version: number) {
  const topics = r.array((t) => ({
    name: t.string(),
    partitions: t.array((p) => {
      const answer = { index: p.int32(), errorCode: p.int16(), baseOffset: p.int64() };
      if (version >= 2) p.int64();
      if (version >= 5) p.int64();
      return answer;
    }),
  }));
  return topics[0]!.partitions[0]!;
}

/** The body of a Fetch v11 request of one partition from `offset`. */
export function fetchBody(
  topic: string,
  partition: number,
  offset: number,
  maxWaitMs = 0,
  maxBytes = 1 << 20,
) {
  return (w: KafkaWriter) => {
    w.int32(-1).int32(maxWaitMs).int32(1).int32(maxBytes).int8(0).int32(0).int32(-1);
    w.array([0], (x) => {
      x.nullableString(topic);
      x.array([0], (p) => p.int32(partition).int32(-1).int64(offset).int64(-1).int32(maxBytes));
    });
    w.int32(0).nullableString("");
  };
}

/** A Fetch v11 response of one partition, after the correlation id: its error, watermark and records. */
export function readFetchAnswer(r: KafkaReader) {
  r.int32();
  r.int16();
  r.int32();
  const topics = r.array((t) => ({
    name: t.string(),
    partitions: t.array((p) => {
      const partition = p.int32();
      const errorCode = p.int16();
      const highWatermark = p.int64();
      p.int64();
      p.int64();
      p.int32();
      p.int32();
      return { partition, errorCode, highWatermark, records: p.nullableBytes() ?? new Uint8Array(0) };
    }),
  }));
  return topics[0]!.partitions[0]!;
}
