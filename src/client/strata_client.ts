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

export interface ProduceMessage {
  payload: Uint8Array;
  key?: string;
  headers?: Record<string, string>;
}

export interface PolledMessage {
  offset: number;
  /** Microseconds since the Unix epoch, stamped by the server. */
  timestamp: number;
  key: string | null;
  headers: Record<string, string>;
  payload: Uint8Array;
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
}

export type TopicPatch = Partial<Omit<TopicCreate, "name" | "partitions" | "segment_size">>;

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
    const wire = messages.map((m) => ({
      payload: this.#encoding === "msgpack" ? m.payload : Buffer.from(m.payload).toString("base64"),
      ...(m.key !== undefined ? { key: m.key } : {}),
      ...(m.headers !== undefined ? { headers: m.headers } : {}),
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
      messages: raw.messages.map((m) => ({
        offset: m["offset"] as number,
        timestamp: m["timestamp"] as number,
        key: m["key"] as string | null,
        headers: m["headers"] as Record<string, string>,
        payload: typeof m["payload"] === "string"
          ? new Uint8Array(Buffer.from(m["payload"], "base64"))
          : new Uint8Array(m["payload"] as Uint8Array),
      })),
    };
  }

  partition(stream: string, topic: string, partition: number): Promise<Record<string, unknown>> {
    return this.#call("GET", `/streams/${e(stream)}/topics/${e(topic)}/partitions/${partition}`);
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
        const packed = packr.pack(body);
        payload = new Uint8Array(packed.buffer as ArrayBuffer, packed.byteOffset, packed.byteLength);
      } else {
        payload = JSON.stringify(body);
      }
    }
    return this.#fetch(new Request(`${this.#baseUrl}${path}`, { method, headers, body: payload }));
  }
}

const e = encodeURIComponent;
