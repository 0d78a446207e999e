/**
 * The bytes Kafka's consumers put in their group's protocol metadata (protocol type "consumer"),
 * read for the HTTP API's view of a group. The coordinator never needs them: it passes them between
 * members as they are. An assignment is: version int16, topics [name string, partitions int32[]],
 * then user data (bytes); a subscription: version int16, topics [name string], then user data.
 */

export interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/** Bounds on what one assignment may list, so that a bad one cannot make a large answer. */
const topicsMax = 100_000;
const partitionsMax = 1_000_000;

/** The topics and partitions a consumer's assignment lists, or null when the bytes are not one. */
export function decodeConsumerAssignment(bytes: Uint8Array): TopicPartitions[] | null {
  const reader = new Reader(bytes);
  try {
    const version = reader.int16();
    if (version < 0) return null;
    const topics: TopicPartitions[] = [];
    const count = reader.count(topicsMax);
    for (let i = 0; i < count; i++) {
      const topic = reader.string();
      const partitions: number[] = [];
      const n = reader.count(partitionsMax);
      for (let j = 0; j < n; j++) partitions.push(reader.int32());
      topics.push({ topic, partitions });
    }
    return topics;
  } catch (error) {
    if (error instanceof RangeError || error instanceof TypeError) return null;
    throw error;
  }
}

/** The topics a consumer's subscription names, or null when the bytes are not one. */
export function decodeConsumerSubscription(bytes: Uint8Array): string[] | null {
  const reader = new Reader(bytes);
  try {
    if (reader.int16() < 0) return null;
    const count = reader.count(topicsMax);
    const topics: string[] = [];
    for (let i = 0; i < count; i++) topics.push(reader.string());
    return topics;
  } catch (error) {
    if (error instanceof RangeError || error instanceof TypeError) return null;
    throw error;
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Big-endian reads that throw RangeError past the end or on a count out of bounds. */
class Reader {
  readonly #view: DataView;
  readonly #bytes: Uint8Array;
  #at = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  int16(): number {
    const value = this.#view.getInt16(this.#at);
    this.#at += 2;
    return value;
  }

  int32(): number {
    const value = this.#view.getInt32(this.#at);
    this.#at += 4;
    return value;
  }

  count(max: number): number {
    const n = this.int32();
    if (n < 0 || n > max) throw new RangeError(`a count of ${n}`);
    return n;
  }

  string(): string {
    const length = this.int16();
    if (length < 0 || this.#at + length > this.#bytes.length) throw new RangeError(`a string of ${length}`);
    const text = utf8.decode(this.#bytes.subarray(this.#at, this.#at + length));
    this.#at += length;
    return text;
  }
}
