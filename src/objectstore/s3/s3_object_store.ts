import type { SignatureV4 } from "@smithy/signature-v4";
import { createHash } from "node:crypto";
import { Pool } from "undici";
import { Buffer } from "node:buffer";
import type { Clock } from "../../runtime/clock.ts";
import { Crc32Stream } from "../../runtime/crc32.ts";
import { checkKey } from "../key_check.ts";
import {
  type BodySource,
  type DeleteResult,
  keysPerRequestMax,
  type ListOptions,
  type ListPage,
  type ObjectHead,
  type ObjectStore,
  type OpOptions,
  pieceBytesMax,
  type PieceSink,
  type PutOptions,
  type PutResult,
} from "../object_store.ts";
import {
  CorruptError,
  MalformedError,
  ObjectStoreError,
  PreconditionFailedError,
  TransportError,
} from "../object_store_errors.ts";
import { mapS3Error } from "./s3_errors.ts";
import { createS3Signer, encodeKeyPath } from "./s3_signer.ts";
import { deleteRequestXml, parseDeleteResult, parseErrorBody, parseListV2 } from "./s3_xml.ts";

export interface S3Settings {
  /** e.g. "http://127.0.0.1:7480" or "https://s3.eu-central-1.amazonaws.com". */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  urlStyle: "path" | "virtual";
  /** Use `If-None-Match: *` for create-if-absent; otherwise HEAD then PUT. */
  conditionalWrites: boolean;
  connectionIdleTimeoutMs: number;
  /** Connections per endpoint. */
  connectionsMax: number;
  /** Per-attempt timeout when the caller gives none. */
  requestTimeoutMs: number;
}

interface S3Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Uint8Array> & { dump?: () => Promise<void> };
}

/** A 403 whose Date header is further than this from our clock is taken for clock skew. */
const clockSkewToleranceMs = 5 * 60 * 1000;

/** Bound on an error or XML answer read into memory. */
const smallBodyBytesMax = 8 * 1024 * 1024;

/**
 * The S3 backend: undici for transport (one pool per endpoint, idle connections closed after
 * `connectionIdleTimeoutMs`, a timeout per attempt on the injected clock) and SigV4 from
 * @smithy/signature-v4. A PUT is one streamed request with an exact Content-Length and an
 * unsigned payload; its CRC32 goes in `x-amz-checksum-crc32` and is also checked as the bytes
 * go out, so a body that changed under us is aborted, never stored.
 */
export class S3ObjectStore implements ObjectStore {
  readonly settings: S3Settings;
  readonly #clock: Clock;
  readonly #signer: SignatureV4;
  readonly #pool: Pool;
  readonly #origin: URL;
  /** Server time minus ours, learned from a RequestTimeTooSkewed answer. */
  #clockOffsetMs = 0;

  constructor(settings: S3Settings, clock: Clock) {
    this.settings = settings;
    this.#clock = clock;
    const endpoint = new URL(settings.endpoint);
    this.#origin = settings.urlStyle === "virtual"
      ? new URL(`${endpoint.protocol}//${settings.bucket}.${endpoint.host}`)
      : new URL(`${endpoint.protocol}//${endpoint.host}`);
    this.#pool = new Pool(this.#origin.origin, {
      connections: settings.connectionsMax,
      keepAliveTimeout: settings.connectionIdleTimeoutMs,
      keepAliveMaxTimeout: settings.connectionIdleTimeoutMs,
    });
    this.#signer = createS3Signer(settings, settings.region);
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  async put(key: string, body: BodySource, options: PutOptions): Promise<PutResult> {
    checkKey(key);
    const what = `Cannot put ${key}`;
    if (options.ifAbsent && !this.settings.conditionalWrites) {
      // Correctness never depends on conditional writes (RFC invariant 10): HEAD then PUT.
      if ((await this.head(key, options)) !== null) {
        throw new PreconditionFailedError(`${what}: it already exists`, 412);
      }
    }
    const headers: Record<string, string> = {
      "content-length": String(options.sizeBytes),
      "content-type": "application/octet-stream",
      "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
    };
    if (options.crc32 !== undefined) headers["x-amz-checksum-crc32"] = crc32Base64(options.crc32);
    if (options.ifAbsent && this.settings.conditionalWrites) headers["if-none-match"] = "*";
    for (const [name, value] of Object.entries(options.metadata)) headers[`x-amz-meta-${name}`] = value;
    const stream = checkedBody(body, options, what);
    const response = await this.#request("PUT", this.#keyPath(key), {}, headers, stream, options, what);
    await drain(response);
    return { etag: trimEtag(header(response, "etag")) };
  }

  async getRange(
    key: string,
    start: number,
    endExclusive: number,
    options: OpOptions = {},
  ): Promise<Uint8Array[]> {
    const what = `Cannot get ${key}`;
    const response = await this.#rangeGet(key, start, endExclusive, options, what);
    if (response === null) return [];
    const pieces = await readPieces(response.body, endExclusive - start + 1, what);
    if (response.status === 206) return pieces;
    // A 200 carries the whole object: keep only the range asked for.
    return slicePieces(pieces, start, endExclusive);
  }

  /**
   * A ranged GET whose body goes to `onPiece` as the transport delivers it (undici's chunks, split
   * to at most 1 MiB). A 200 (a store that ignored the range) carries the whole object: it is
   * gathered and sliced as `getRange` does, since the range is then a part of it.
   */
  async streamRange(
    key: string,
    start: number,
    endExclusive: number,
    onPiece: PieceSink,
    options: OpOptions = {},
  ): Promise<number> {
    const what = `Cannot get ${key}`;
    const response = await this.#rangeGet(key, start, endExclusive, options, what);
    if (response === null) return 0;
    if (response.status === 206) {
      return await streamPieces(response.body, endExclusive - start, what, onPiece);
    }
    let position = 0;
    for (
      const piece of slicePieces(
        await readPieces(response.body, endExclusive - start + 1, what),
        start,
        endExclusive,
      )
    ) {
      await onPiece(piece, position);
      position += piece.length;
    }
    return position;
  }

  /** The response to a ranged GET, or null when the range is empty or starts past the object's end. */
  async #rangeGet(
    key: string,
    start: number,
    endExclusive: number,
    options: OpOptions,
    what: string,
  ): Promise<S3Response | null> {
    checkKey(key);
    if (endExclusive <= start) return null;
    const headers = { range: `bytes=${start}-${endExclusive - 1}`, "x-amz-content-sha256": emptySha256 };
    try {
      return await this.#request("GET", this.#keyPath(key), {}, headers, null, options, what);
    } catch (error) {
      // A range starting past the end is empty, as the fs and sim backends answer.
      if (error instanceof MalformedError && error.status === 416) return null;
      throw error;
    }
  }

  async head(key: string, options: OpOptions = {}): Promise<ObjectHead | null> {
    checkKey(key);
    const what = `Cannot head ${key}`;
    let response: S3Response;
    try {
      response = await this.#request(
        "HEAD",
        this.#keyPath(key),
        {},
        { "x-amz-content-sha256": emptySha256 },
        null,
        options,
        what,
      );
    } catch (error) {
      if (error instanceof ObjectStoreError && error.errorClass === "not_found") return null;
      throw error;
    }
    await drain(response);
    const metadata: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (name.startsWith("x-amz-meta-") && typeof value === "string") {
        metadata[name.slice("x-amz-meta-".length)] = value;
      }
    }
    return {
      sizeBytes: Number(header(response, "content-length")),
      metadata,
      etag: trimEtag(header(response, "etag")),
    };
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const maxKeys = Math.min(options.maxKeys ?? keysPerRequestMax, keysPerRequestMax);
    const query: Record<string, string> = { "list-type": "2", prefix, "max-keys": String(maxKeys) };
    if (options.startAfter !== undefined) query["start-after"] = options.startAfter;
    const what = `Cannot list ${prefix}`;
    const response = await this.#request(
      "GET",
      this.#bucketPath(),
      query,
      { "x-amz-content-sha256": emptySha256 },
      null,
      options,
      what,
    );
    const xml = await readText(response, what);
    let parsed;
    try {
      parsed = parseListV2(xml);
    } catch (error) {
      throw new MalformedError(`${what}: the answer is not a ListBucketResult`, null, { cause: error });
    }
    const last = parsed.objects.at(-1)?.key ?? null;
    return { objects: parsed.objects, nextStartAfter: parsed.truncated ? last : null };
  }

  async delete(keys: readonly string[], options: OpOptions = {}): Promise<DeleteResult[]> {
    const results: DeleteResult[] = [];
    // S3 takes at most 1000 keys per DeleteObjects.
    for (let at = 0; at < keys.length; at += keysPerRequestMax) {
      results.push(...await this.#deleteBatch(keys.slice(at, at + keysPerRequestMax), options));
    }
    return results;
  }

  async #deleteBatch(keys: readonly string[], options: OpOptions): Promise<DeleteResult[]> {
    keys.forEach(checkKey);
    const what = `Cannot delete ${keys.length} keys`;
    const xml = new TextEncoder().encode(deleteRequestXml(keys));
    const headers = {
      "content-type": "application/xml",
      "content-length": String(xml.length),
      "content-md5": createHash("md5").update(xml).digest("base64"),
      "x-amz-content-sha256": createHash("sha256").update(xml).digest("hex"),
    };
    const response = await this.#request(
      "POST",
      this.#bucketPath(),
      { delete: "" },
      headers,
      xml,
      options,
      what,
    );
    const outcome = parseDeleteResult(await readText(response, what));
    const failed = new Map(outcome.errors.map((e) => [e.key, e]));
    return keys.map((key) => {
      const error = failed.get(key);
      return {
        key,
        error: error === undefined || error.code === "NoSuchKey"
          ? null
          : mapS3Error(`Cannot delete ${key}`, 500, error.code, error.message),
      };
    });
  }

  /** Signs and sends one request; a non-2xx answer becomes a typed error. Re-signs once on clock skew. */
  async #request(
    method: string,
    path: string,
    query: Record<string, string>,
    headers: Record<string, string>,
    body: AsyncIterable<Uint8Array> | Uint8Array | null,
    options: OpOptions,
    what: string,
  ): Promise<S3Response> {
    let response = await this.#send(method, path, query, headers, body, options, what);
    if (response.status === 403) {
      const text = method === "HEAD" ? "" : await readText(response, what);
      if (method === "HEAD") await drain(response);
      const error = parseErrorBody(text);
      // Skew is named by the error code, or, for a HEAD (no body), by a Date header far from ours.
      const serverMs = Date.parse(header(response, "date"));
      const ourMs = this.#clock.wallMs() + this.#clockOffsetMs;
      const skewed = Number.isFinite(serverMs) &&
        (error.code === "RequestTimeTooSkewed" || Math.abs(serverMs - ourMs) > clockSkewToleranceMs);
      if (!skewed) throw mapS3Error(what, response.status, error.code, error.message);
      // Learn the server's time from its Date header and sign once more with it.
      this.#clockOffsetMs = serverMs - this.#clock.wallMs();
      if (body !== null && !(body instanceof Uint8Array)) {
        // A streamed body cannot be replayed here; the retry layer's next attempt is re-signed.
        throw new TransportError(
          `${what}: clock skew of ${Math.round(this.#clockOffsetMs)} ms; re-signing`,
          403,
        );
      }
      response = await this.#send(method, path, query, headers, body, options, what);
    }
    if (response.status >= 200 && response.status < 300) return response;
    const text = method === "HEAD" ? "" : await readText(response, what);
    if (method === "HEAD") await drain(response);
    const error = parseErrorBody(text);
    throw mapS3Error(what, response.status, error.code, error.message);
  }

  async #send(
    method: string,
    path: string,
    query: Record<string, string>,
    headers: Record<string, string>,
    body: AsyncIterable<Uint8Array> | Uint8Array | null,
    options: OpOptions,
    what: string,
  ): Promise<S3Response> {
    const signed = await this.#signer.sign({
      method,
      protocol: this.#origin.protocol,
      hostname: this.#origin.hostname,
      ...(this.#origin.port ? { port: Number(this.#origin.port) } : {}),
      path,
      query,
      headers: { ...headers, host: this.#origin.host },
    }, { signingDate: new Date(this.#clock.wallMs() + this.#clockOffsetMs) });
    const timeoutMs = options.timeoutMs ?? this.settings.requestTimeoutMs;
    const controller = new AbortController();
    const cancel = this.#clock.schedule(timeoutMs, () => controller.abort());
    const onAbort = () => controller.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const search = new URLSearchParams(query).toString().replace(/=(&|$)/g, "$1");
    try {
      const response = await this.#pool.request({
        method: method as "GET",
        path: search === "" ? path : `${path}?${search}`,
        headers: signed.headers,
        body: body as Uint8Array,
        signal: controller.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      return { status: response.statusCode, headers: response.headers, body: response.body };
    } catch (error) {
      if (error instanceof ObjectStoreError) throw error;
      const reason = controller.signal.aborted ? `timed out after ${timeoutMs} ms` : describeTransport(error);
      // The transport's error names the socket's failure, never the request's headers.
      throw new TransportError(`${what}: ${reason}`, null, { cause: error });
    } finally {
      cancel();
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  #bucketPath(): string {
    return this.settings.urlStyle === "virtual" ? "/" : `/${this.settings.bucket}`;
  }

  #keyPath(key: string): string {
    const encoded = encodeKeyPath(key);
    return this.settings.urlStyle === "virtual" ? `/${encoded}` : `/${this.settings.bucket}/${encoded}`;
  }
}

const emptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/**
 * The body as sent: counted and checksummed on the way. One piece is held back, so the size and
 * the CRC32 are checked before the final bytes go out: a body that does not match aborts the
 * request before the store has a complete body it could commit. The held piece is a copy: the
 * source may reuse its buffer once the next piece is pulled, and the transport may queue a piece
 * it was handed until the socket drains.
 */
async function* checkedBody(body: BodySource, options: PutOptions, what: string): AsyncGenerator<Uint8Array> {
  // Only a declared checksum is checked; hashing costs about 0.12 ms per MiB (docs/TUNING.md).
  const crc = options.crc32 === undefined ? null : new Crc32Stream();
  let sent = 0;
  let held: Uint8Array | null = null;
  for await (const piece of body()) {
    sent += piece.length;
    if (sent > options.sizeBytes) {
      throw new MalformedError(`${what}: the body is longer than ${options.sizeBytes} bytes`);
    }
    crc?.update(piece);
    if (held !== null) yield held;
    held = piece.slice();
  }
  if (sent !== options.sizeBytes) {
    throw new MalformedError(`${what}: the body is ${sent} bytes, not ${options.sizeBytes}`);
  }
  if (crc !== null && crc.digest() !== options.crc32) {
    throw new CorruptError(`${what}: the body's CRC32 does not match the one declared`);
  }
  if (held !== null) yield held;
}

/**
 * Reads a response body as the transport delivers it: undici's chunks are already pieces (well
 * under 1 MiB), so they are kept as they are, without copying; a larger one is split into views.
 */
async function readPieces(
  body: AsyncIterable<Uint8Array>,
  bytesMax: number,
  what: string,
): Promise<Uint8Array[]> {
  const pieces: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      total += chunk.length;
      if (total > bytesMax + smallBodyBytesMax) {
        throw new MalformedError(`${what}: the answer is longer than asked`);
      }
      const view = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      for (let at = 0; at < view.length; at += pieceBytesMax) {
        pieces.push(view.subarray(at, at + pieceBytesMax));
      }
    }
  } catch (error) {
    if (error instanceof ObjectStoreError) throw error;
    throw new TransportError(`${what}: ${describeTransport(error)}`, null, { cause: error });
  }
  return pieces;
}

/** Hands a response body to `onPiece` chunk by chunk, refusing one longer than `bytesMax`. */
async function streamPieces(
  body: AsyncIterable<Uint8Array>,
  bytesMax: number,
  what: string,
  onPiece: PieceSink,
): Promise<number> {
  let total = 0;
  // The sink's own failure (a full disk) is passed on as it is, not as the transport's.
  let sinkError: unknown = undefined;
  try {
    for await (const chunk of body) {
      if (total + chunk.length > bytesMax) {
        throw new MalformedError(`${what}: the answer is longer than asked`);
      }
      const view = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      for (let at = 0; at < view.length; at += pieceBytesMax) {
        const piece = view.subarray(at, at + pieceBytesMax);
        try {
          await onPiece(piece, total);
        } catch (error) {
          sinkError = error;
          throw error;
        }
        total += piece.length;
      }
    }
  } catch (error) {
    if (error === sinkError || error instanceof ObjectStoreError) throw error;
    throw new TransportError(`${what}: ${describeTransport(error)}`, null, { cause: error });
  }
  return total;
}

function slicePieces(pieces: Uint8Array[], start: number, endExclusive: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const piece of pieces) {
    const from = Math.max(start, at);
    const to = Math.min(endExclusive, at + piece.length);
    if (from < to) out.push(piece.subarray(from - at, to - at));
    at += piece.length;
  }
  return out;
}

async function readText(response: S3Response, what: string): Promise<string> {
  const pieces = await readPieces(response.body, smallBodyBytesMax, what);
  return new TextDecoder().decode(Buffer.concat(pieces));
}

async function drain(response: S3Response): Promise<void> {
  if (typeof response.body.dump === "function") await response.body.dump();
  else for await (const _ of response.body) { /* discard */ }
}

function header(response: S3Response, name: string): string {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] ?? "" : value ?? "";
}

function trimEtag(etag: string): string {
  return etag.replace(/^"|"$/g, "");
}

export function crc32Base64(crc: number): string {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, crc, false);
  return Buffer.from(bytes).toString("base64");
}

function describeTransport(error: unknown): string {
  const e = error as { code?: string; message?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code ?? e?.message ?? String(error);
}
