import { createHash } from "node:crypto";
import type { Clock } from "../../runtime/clock/clock.ts";
import {
  type BodySource,
  checkKey,
  type DeleteResult,
  type GetOptions,
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
import { BufferPool } from "../../runtime/memory/buffers.ts";
import { MalformedError, ObjectStoreError, PreconditionFailedError } from "../object_store_errors.ts";
import { mapS3Error } from "./s3_errors.ts";
import { checkedBody, crc32Base64 } from "./s3_put_body.ts";
import {
  drain,
  header,
  readPieces,
  readText,
  type S3Response,
  slicePieces,
  streamPieces,
  trimEtag,
} from "./s3_response.ts";
import type { S3Settings } from "./s3_settings.ts";
import { emptyPayloadSha256, S3Transport } from "./s3_transport.ts";
import { deleteRequestXml, parseDeleteResult, parseListV2 } from "./s3_xml.ts";

/**
 * The S3 backend: each operation of the contract as S3 requests, sent by `S3Transport` (signing,
 * the connection pool, timeouts, clock skew, errors). A PUT is one streamed request with an exact
 * Content-Length and an unsigned payload; its CRC32 goes in `x-amz-checksum-crc32` and is also
 * checked as the bytes go out (`s3_put_body.ts`), so a body that changed while it was sent is
 * aborted, never stored.
 */
/**
 * Bound on the buffers streamed ranges gather their pieces in: one per stream running at once (a
 * shard fills at most `fetch_concurrency` chunks at a time, 4 by default), so a few more than that.
 * A stream that finds them all out gathers into a buffer of its own.
 */
export const gatherBuffersMax = 8;

export class S3ObjectStore implements ObjectStore {
  readonly settings: S3Settings;
  readonly #transport: S3Transport;
  readonly #gatherBuffers = new BufferPool({ bufferBytes: pieceBytesMax, buffersMax: gatherBuffersMax });

  constructor(settings: S3Settings, clock: Clock) {
    this.settings = settings;
    this.#transport = new S3Transport(settings, clock);
  }

  close(): Promise<void> {
    return this.#transport.close();
  }

  async put(key: string, body: BodySource, options: PutOptions): Promise<PutResult> {
    checkKey(key);
    const what = `Cannot put ${key}`;
    if (options.ifAbsent && !this.settings.conditionalWrites) {
      // Correctness never depends on conditional writes (docs/DESIGN.md, "The object key layout"):
      // HEAD then PUT.
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
    const response = await this.#transport.request(
      {
        method: "PUT",
        path: this.#transport.keyPath(key),
        query: {},
        headers,
        body: checkedBody(body, options, what),
      },
      options,
      what,
    );
    await drain(response);
    return { etag: trimEtag(header(response, "etag")) };
  }

  async getRange(
    key: string,
    start: number,
    endExclusive: number,
    options: GetOptions = {},
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
      const lengthBytes = endExclusive - start;
      const gather = this.#gatherBuffers.takeBounded(Math.min(pieceBytesMax, lengthBytes)) ??
        new Uint8Array(Math.min(pieceBytesMax, lengthBytes));
      try {
        return await streamPieces(response.body, lengthBytes, what, onPiece, gather);
      } finally {
        this.#gatherBuffers.give(gather);
      }
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
    options: GetOptions,
    what: string,
  ): Promise<S3Response | null> {
    checkKey(key);
    if (endExclusive <= start) return null;
    const headers: Record<string, string> = {
      range: `bytes=${start}-${endExclusive - 1}`,
      "x-amz-content-sha256": emptyPayloadSha256,
      ...(options.ifNoneMatch === undefined ? {} : { "if-none-match": `"${options.ifNoneMatch}"` }),
    };
    try {
      return await this.#transport.request(
        { method: "GET", path: this.#transport.keyPath(key), query: {}, headers, body: null },
        options,
        what,
      );
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
      response = await this.#transport.request(
        {
          method: "HEAD",
          path: this.#transport.keyPath(key),
          query: {},
          headers: { "x-amz-content-sha256": emptyPayloadSha256 },
          body: null,
        },
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
    const response = await this.#transport.request(
      {
        method: "GET",
        path: this.#transport.bucketPath(),
        query,
        headers: { "x-amz-content-sha256": emptyPayloadSha256 },
        body: null,
      },
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
    const response = await this.#transport.request(
      {
        method: "POST",
        path: this.#transport.bucketPath(),
        query: { delete: "" },
        headers,
        body: xml,
      },
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
}
