import type { SignatureV4 } from "@smithy/signature-v4";
import { Pool } from "undici";
import type { Clock } from "../../runtime/clock/clock.ts";
import type { OpOptions } from "../object_store.ts";
import { ObjectStoreError, TransportError } from "../object_store_errors.ts";
import { mapS3Error } from "./s3_errors.ts";
import { describeTransport, drain, header, readText, type S3Response } from "./s3_response.ts";
import type { S3Settings } from "./s3_settings.ts";
import { createS3Signer, encodeKeyPath } from "./s3_signer.ts";
import { parseErrorBody } from "./s3_xml.ts";

/** One S3 request before it is signed: the path is already URI-encoded, the query not yet. */
export interface S3Request {
  method: "GET" | "HEAD" | "PUT" | "POST";
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array> | Uint8Array | null;
}

/** `x-amz-content-sha256` of a request without a body: the SHA-256 of no bytes. */
export const emptyPayloadSha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** A 403 whose Date header is further than this from the local clock is taken for clock skew. */
const clockSkewToleranceMs = 5 * 60 * 1000;

/**
 * Requests to one bucket: undici for transport (one pool per endpoint, idle connections closed
 * after `connectionIdleTimeoutMs`, a timeout per attempt on the injected clock) and SigV4 from
 * @smithy/signature-v4. A non-2xx answer becomes a typed error; a 403 for clock skew is signed
 * again once with the server's time.
 */
export class S3Transport {
  readonly #settings: S3Settings;
  readonly #clock: Clock;
  readonly #signer: SignatureV4;
  readonly #pool: Pool;
  readonly #origin: URL;
  /** The server's clock minus the local one, learned from a RequestTimeTooSkewed answer. */
  #clockOffsetMs = 0;

  constructor(settings: S3Settings, clock: Clock) {
    this.#settings = settings;
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

  /** The path of the bucket itself, for listings and batch deletes. */
  bucketPath(): string {
    return this.#settings.urlStyle === "virtual" ? "/" : `/${this.#settings.bucket}`;
  }

  /** The path of an object, its key URI-encoded as S3 signs it. */
  keyPath(key: string): string {
    const encoded = encodeKeyPath(key);
    return this.#settings.urlStyle === "virtual" ? `/${encoded}` : `/${this.#settings.bucket}/${encoded}`;
  }

  /** Signs and sends one request; a non-2xx answer becomes a typed error. Re-signs once on clock skew. */
  async request(request: S3Request, options: OpOptions, what: string): Promise<S3Response> {
    let response = await this.#send(request, options, what);
    if (response.status === 403) {
      const text = request.method === "HEAD" ? "" : await readText(response, what);
      if (request.method === "HEAD") await drain(response);
      const error = parseErrorBody(text);
      // Skew is named by the error code, or, for a HEAD (no body), by a Date header far from the
      // local clock's time.
      const serverMs = Date.parse(header(response, "date"));
      const localMs = this.#clock.wallMs() + this.#clockOffsetMs;
      const skewed = Number.isFinite(serverMs) &&
        (error.code === "RequestTimeTooSkewed" || Math.abs(serverMs - localMs) > clockSkewToleranceMs);
      if (!skewed) throw mapS3Error(what, response.status, error.code, error.message);
      // Learn the server's time from its Date header and sign once more with it.
      this.#clockOffsetMs = serverMs - this.#clock.wallMs();
      if (request.body !== null && !(request.body instanceof Uint8Array)) {
        // A streamed body cannot be replayed here; the retry layer's next attempt is re-signed.
        throw new TransportError(
          `${what}: clock skew of ${Math.round(this.#clockOffsetMs)} ms; re-signing`,
          403,
        );
      }
      response = await this.#send(request, options, what);
    }
    if (response.status >= 200 && response.status < 300) return response;
    const text = request.method === "HEAD" ? "" : await readText(response, what);
    if (request.method === "HEAD") await drain(response);
    const error = parseErrorBody(text);
    throw mapS3Error(what, response.status, error.code, error.message);
  }

  async #send(request: S3Request, options: OpOptions, what: string): Promise<S3Response> {
    const { method, path, query, headers, body } = request;
    const signed = await this.#signer.sign({
      method,
      protocol: this.#origin.protocol,
      hostname: this.#origin.hostname,
      ...(this.#origin.port ? { port: Number(this.#origin.port) } : {}),
      path,
      query,
      headers: { ...headers, host: this.#origin.host },
    }, { signingDate: new Date(this.#clock.wallMs() + this.#clockOffsetMs) });
    const timeoutMs = options.timeoutMs ?? this.#settings.requestTimeoutMs;
    const controller = new AbortController();
    const cancel = this.#clock.schedule(timeoutMs, () => controller.abort());
    const onAbort = () => controller.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const search = new URLSearchParams(query).toString().replace(/=(&|$)/g, "$1");
    try {
      const response = await this.#pool.request({
        method,
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
}
