import { Buffer } from "node:buffer";
import { Packr } from "msgpackr";

export type ClientEncoding = "json" | "msgpack";

export interface ClientOptions {
  baseUrl: string;
  /** Body encoding for requests and answers; "msgpack" carries payloads as raw bytes. */
  encoding?: ClientEncoding;
  token?: string;
  /** Injected for tests that call a fetch handler directly, without a socket. */
  fetch?: (request: Request) => Promise<Response>;
}

/** A header value: text (sent as its UTF-8), bytes, or null. */
export interface ClientHeader {
  name: string;
  value: string | Uint8Array | null;
}

export interface ProduceMessage {
  /** null: a null value. */
  payload: Uint8Array | null;
  /** Text or bytes; absent or null: no key. */
  key?: string | Uint8Array | null;
  /** Names to text, or an ordered list (names may repeat). */
  headers?: Record<string, string> | ClientHeader[];
  /** Milliseconds since the Unix epoch; absent: the server's time. */
  timestamp?: number;
}

export interface PolledMessage {
  offset: number;
  /** Milliseconds since the Unix epoch. */
  timestamp: number;
  /** The key as text, when it is UTF-8; null when there is none or it is not text. */
  key: string | null;
  /** The key's bytes; null when there is none. */
  keyBytes: Uint8Array | null;
  headers: { name: string; value: Uint8Array | null }[];
  payload: Uint8Array | null;
}

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Bytes as an answer carries them: base64 text (JSON), binary (msgpack), or null. */
function bytesIn(value: unknown): Uint8Array | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return new Uint8Array(Buffer.from(value, "base64"));
  return new Uint8Array(value as Uint8Array);
}

function textOf(bytes: Uint8Array | null): string | null {
  if (bytes === null) return null;
  try {
    return strictUtf8.decode(bytes);
  } catch (error) {
    // Bytes that are not UTF-8 (the strict decoder's TypeError) have no text; the bytes stay.
    if (error instanceof TypeError) return null;
    throw error;
  }
}

/** A message of a poll's answer, JSON or msgpack (docs/API.md, "Messages"). */
function polledMessage(m: Record<string, unknown>): PolledMessage {
  const key = m["key"];
  const keyBytes = m["key_base64"] !== undefined
    ? bytesIn(m["key_base64"])
    : typeof key === "string"
    ? utf8.encode(key)
    : bytesIn(key);
  const headers = (m["headers"] as Record<string, unknown>[]).map((h) => ({
    name: h["name"] as string,
    value: h["value_base64"] !== undefined
      ? bytesIn(h["value_base64"])
      : typeof h["value"] === "string"
      ? utf8.encode(h["value"])
      : bytesIn(h["value"]),
  }));
  return {
    offset: m["offset"] as number,
    timestamp: m["timestamp"] as number,
    key: textOf(keyBytes),
    keyBytes,
    headers,
    payload: bytesIn(m["payload"]),
  };
}

export interface PollOptions {
  offset?: number;
  timestamp?: number;
  count?: number;
  maxBytes?: number;
}

export interface TopicCreate {
  name: string;
  partitions?: number;
  segment_size?: number | string;
  segment_max_age?: number | string | null;
  retention_max_age?: number | string | null;
  retention_max_bytes?: number | string | null;
  tiered?: boolean;
  local_retention_age?: number | string | null;
  local_retention_size?: number | string | null;
  retention_consumer_barrier?: boolean;
  timestamp_type?: "create_time" | "log_append_time";
  /** The largest record batch a Kafka producer may send. */
  max_message_bytes?: number | string;
  /** In a cluster: the nodes that hold each partition; absent or null, the cluster's default. */
  replication_factor?: number | null;
  /** A read replica of this topic of a cluster in the same bucket; it takes every other option from it. */
  read_replica_of?: { cluster_id: string; stream: string; topic: string; bucket?: string | null };
}

export type TopicPatch = Partial<
  Omit<TopicCreate, "name" | "partitions" | "segment_size" | "read_replica_of">
>;

/** An error answer from the server: its status, error code and message. */
export class StrataApiError extends Error {
  override name = "StrataApiError";
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });
const msgpack = "application/msgpack";

/** A small typed client for every endpoint of the Strata HTTP API, in JSON or msgpack. */
export class StrataClient {
  readonly #baseUrl: string;
  readonly #encoding: ClientEncoding;
  readonly #token: string | undefined;
  readonly #fetch: (request: Request) => Promise<Response>;

  constructor(options: ClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/$/, "");
    this.#encoding = options.encoding ?? "json";
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((request) => fetch(request));
  }

  createStream(name: string): Promise<Record<string, unknown>> {
    return this.#call("POST", "/streams", { name });
  }

  async listStreams(): Promise<Record<string, unknown>[]> {
    return (await this.#call<{ streams: Record<string, unknown>[] }>("GET", "/streams")).streams;
  }

  getStream(stream: string): Promise<Record<string, unknown>> {
    return this.#call("GET", `/streams/${e(stream)}`);
  }

  deleteStream(stream: string): Promise<void> {
    return this.#call("DELETE", `/streams/${e(stream)}`);
  }

  createTopic(stream: string, topic: TopicCreate): Promise<Record<string, unknown>> {
    return this.#call("POST", `/streams/${e(stream)}/topics`, topic);
  }

  getTopic(stream: string, topic: string): Promise<Record<string, unknown>> {
    return this.#call("GET", `/streams/${e(stream)}/topics/${e(topic)}`);
  }

  patchTopic(stream: string, topic: string, patch: TopicPatch): Promise<Record<string, unknown>> {
    return this.#call("PATCH", `/streams/${e(stream)}/topics/${e(topic)}`, patch);
  }

  /** True once every message below `offset` is durable in the object store; false if `timeoutMs` passed first. */
  async awaitTiered(
    stream: string,
    topic: string,
    partition: number,
    offset: number,
    timeoutMs: number,
  ): Promise<boolean> {
    const path = `/streams/${e(stream)}/topics/${
      e(topic)
    }/partitions/${partition}/tier/await?offset=${offset}&timeout_ms=${timeoutMs}`;
    try {
      await this.#call("GET", path);
      return true;
    } catch (error) {
      if (error instanceof StrataApiError && error.status === 408) return false;
      throw error;
    }
  }

  deleteTopic(stream: string, topic: string): Promise<void> {
    return this.#call("DELETE", `/streams/${e(stream)}/topics/${e(topic)}`);
  }

  purgeTopic(stream: string, topic: string): Promise<void> {
    return this.#call("DELETE", `/streams/${e(stream)}/topics/${e(topic)}/messages`);
  }

  /** Resolves once the batch is durable: its partition, base offset and count. */
  produce(
    stream: string,
    topic: string,
    messages: ProduceMessage[],
    partition?: number,
  ): Promise<{ partition: number; base_offset: number; count: number }> {
    const msgpack = this.#encoding === "msgpack";
    const bytesOut = (b: Uint8Array) => (msgpack ? b : Buffer.from(b).toString("base64"));
    const wire = messages.map((m) => ({
      payload: m.payload === null ? null : bytesOut(m.payload),
      ...(typeof m.key === "string" || m.key === null ? { key: m.key } : {}),
      ...(m.key instanceof Uint8Array ? (msgpack ? { key: m.key } : { key_base64: bytesOut(m.key) }) : {}),
      ...(m.headers === undefined ? {} : {
        headers: Array.isArray(m.headers)
          ? m.headers.map((h) =>
            h.value instanceof Uint8Array && !msgpack
              ? { name: h.name, value_base64: bytesOut(h.value) }
              : { name: h.name, value: h.value }
          )
          : m.headers,
      }),
      ...(m.timestamp !== undefined ? { timestamp: m.timestamp } : {}),
    }));
    return this.#call("POST", `/streams/${e(stream)}/topics/${e(topic)}/messages`, {
      ...(partition !== undefined ? { partition } : {}),
      messages: wire,
    });
  }

  async poll(
    stream: string,
    topic: string,
    partition: number,
    options: PollOptions = {},
  ): Promise<{ messages: PolledMessage[]; next_offset: number }> {
    const q = new URLSearchParams();
    if (options.offset !== undefined) q.set("offset", String(options.offset));
    if (options.timestamp !== undefined) q.set("timestamp", String(options.timestamp));
    if (options.count !== undefined) q.set("count", String(options.count));
    if (options.maxBytes !== undefined) q.set("max_bytes", String(options.maxBytes));
    const path = `/streams/${e(stream)}/topics/${e(topic)}/partitions/${partition}/messages?${q}`;
    const raw = await this.#call<{ messages: Record<string, unknown>[]; next_offset: number }>("GET", path);
    return {
      next_offset: raw.next_offset,
      messages: raw.messages.map(polledMessage),
    };
  }

  partition(stream: string, topic: string, partition: number): Promise<Record<string, unknown>> {
    return this.#call("GET", `/streams/${e(stream)}/topics/${e(topic)}/partitions/${partition}`);
  }

  /** The partition's idempotent producers: `{producers: [...]}`. */
  producers(stream: string, topic: string, partition: number): Promise<Record<string, unknown>> {
    return this.#call("GET", `/streams/${e(stream)}/topics/${e(topic)}/partitions/${partition}/producers`);
  }

  storeOffset(
    stream: string,
    topic: string,
    partition: number,
    consumer: string,
    offset: number,
  ): Promise<unknown> {
    return this.#call(
      "PUT",
      `/streams/${e(stream)}/topics/${e(topic)}/partitions/${partition}/consumers/${e(consumer)}/offset`,
      {
        offset,
      },
    );
  }

  async getOffset(stream: string, topic: string, partition: number, consumer: string): Promise<number> {
    const path = `/streams/${e(stream)}/topics/${e(topic)}/partitions/${partition}/consumers/${
      e(consumer)
    }/offset`;
    return (await this.#call<{ offset: number }>("GET", path)).offset;
  }

  async metrics(): Promise<string> {
    return await (await this.#send("GET", "/metrics")).text();
  }

  health(): Promise<Record<string, unknown>> {
    return this.#call("GET", "/health");
  }

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.#send(method, path, body);
    if (response.status === 204) return undefined as T;
    const type = response.headers.get("content-type") ?? "";
    const bytes = new Uint8Array(await response.arrayBuffer());
    const value = type.includes(msgpack) ? packr.unpack(bytes) : JSON.parse(new TextDecoder().decode(bytes));
    if (!response.ok) {
      throw new StrataApiError(
        response.status,
        value?.error ?? "unknown",
        value?.message ?? `HTTP ${response.status}`,
      );
    }
    return value as T;
  }

  #send(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = {
      accept: this.#encoding === "msgpack" ? msgpack : "application/json",
    };
    if (this.#token !== undefined) headers["authorization"] = `Bearer ${this.#token}`;
    let payload: BodyInit | undefined;
    if (body !== undefined) {
      headers["content-type"] = this.#encoding === "msgpack" ? msgpack : "application/json";
      if (this.#encoding === "msgpack") {
        // A Blob holds its own copy and can be read again: a 307 to the leader sends the body once
        // more (a view of packr's reused buffer would be detached by the first send).
        payload = new Blob([packr.pack(body) as Uint8Array<ArrayBuffer>]);
      } else {
        payload = JSON.stringify(body);
      }
    }
    return this.#fetch(new Request(`${this.#baseUrl}${path}`, { method, headers, body: payload }));
  }
}

const e = encodeURIComponent;
