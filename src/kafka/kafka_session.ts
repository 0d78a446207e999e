import { assert } from "../runtime/assert.ts";
import type { ApiVersionRange } from "./apis/api_versions_codec.ts";
import type { KafkaAnswer, KafkaApi, KafkaServing } from "./kafka_api.ts";
import type { KafkaMetrics } from "./kafka_metrics.ts";
import { apiKey, readRequestHeader, type RequestHeader } from "./wire/frame_codec.ts";
import type { KafkaReader } from "./wire/kafka_codec.ts";
import type { Logger } from "../runtime/logger.ts";
import { kafkaErrorCode } from "./kafka_errors.ts";
import { authenticatePlain } from "./apis/sasl_plain.ts";
import {
  encodeSaslAuthenticateResponse,
  encodeSaslHandshakeResponse,
  plainMechanism,
  readSaslAuthenticate,
} from "./apis/sasl_api.ts";
import { replicaFetchApiKey } from "./replica/replica_fetch_codec.ts";

/**
 * What a Kafka connection serves its frames with: one session per connection (it will hold the
 * connection's authentication), answering each request frame (header and body, without the size
 * field) with the response's pieces (header and body, without the size field), or with null when
 * the request takes no response (a produce with acks 0). A handler that rejects closes the
 * connection: a `KafkaProtocolError` for input that breaks the protocol, anything else for a fault.
 */
export interface KafkaSession {
  handle(frame: Uint8Array): Promise<KafkaResponse | null>;
  /** The connection closed; nothing more will be handled. */
  closed(): void;
}

/**
 * A response's pieces, and what to call once they are written (or the connection failed first): a
 * fetch's pieces are views into cache chunks, given back then.
 */
export interface KafkaResponse {
  pieces: readonly Uint8Array[];
  release?: () => void;
  /** Close the connection once this is written, for this reason (a refused authentication). */
  closeAfter?: string;
}

/** Input that breaks the protocol (malformed, unknown API, refused before authentication). */
export class KafkaProtocolError extends Error {
  override name = "KafkaProtocolError";
  /** A short label for the metric of closed connections, e.g. "malformed" or "unknown_api". */
  readonly reason: string;
  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/** The ranges ApiVersions answers with: every API of `apis`, from its lowest to its newest version. */
export function servedRanges(apis: readonly KafkaApi[]): ApiVersionRange[] {
  return apis.map((a) => ({ apiKey: a.apiKey, minVersion: a.minVersion, maxVersion: a.maxVersion }));
}

/**
 * Serves one connection's requests: reads each frame's header, hands the body to the API's
 * handler and counts it. An API key not served, or a version outside an API's range (but for
 * ApiVersions, which answers any version so that a client can learn the ranges), closes the
 * connection, as a Kafka broker does: the client cannot read an answer in a version it did not ask for.
 */
export class KafkaRequestSession implements KafkaSession {
  readonly #apis: ReadonlyMap<number, KafkaApi>;
  readonly #serving: KafkaServing;
  readonly #metrics: KafkaMetrics;
  readonly #sasl: SaslGate;

  constructor(
    apis: ReadonlyMap<number, KafkaApi>,
    serving: KafkaServing,
    metrics: KafkaMetrics,
    remoteAddress: string,
  ) {
    this.#apis = apis;
    this.#serving = { ...serving, remoteAddress };
    this.#metrics = metrics;
    this.#sasl = new SaslGate(serving.users, serving.logger, remoteAddress);
  }

  async handle(frame: Uint8Array): Promise<KafkaResponse | null> {
    const startedMs = this.#serving.clock.nowMs();
    const { header, body } = readRequestHeader(frame);
    const api = this.#apis.get(header.apiKey);
    const name = api?.name ?? "unknown";
    this.#metrics.requests.inc({ api: name });
    try {
      if (api === undefined) {
        throw new KafkaProtocolError(
          "unknown_api",
          `Cannot serve API key ${header.apiKey}: it is not served`,
        );
      }
      const inRange = header.apiVersion >= api.minVersion && header.apiVersion <= api.maxVersion;
      if (!inRange && api.apiKey !== apiKey.apiVersions) {
        throw new KafkaProtocolError(
          "unsupported_version",
          `Cannot serve ${name} v${header.apiVersion}: versions ${api.minVersion} to ${api.maxVersion} are served`,
        );
      }
      this.#sasl.check(api.apiKey);
      const answer = await this.#answer(api, header, body);
      if (answer !== null && answer.errorCount > 0) this.#metrics.errors.inc({ api: name });
      return answer;
    } catch (error) {
      this.#metrics.errors.inc({ api: name });
      throw error;
    } finally {
      this.#metrics.latency.observe({ api: name }, (this.#serving.clock.nowMs() - startedMs) / 1000);
    }
  }

  closed(): void {}

  /** The API's answer; SASL's two APIs also move the connection's authentication along. */
  #answer(api: KafkaApi, header: RequestHeader, body: KafkaReader): Promise<KafkaAnswer | null> {
    if (api.apiKey === apiKey.saslAuthenticate) return Promise.resolve(this.#sasl.authenticate(header, body));
    if (api.apiKey === apiKey.saslHandshake) return Promise.resolve(this.#sasl.handshake(header, body));
    return api.handle(header, body, this.#serving);
  }
}

/** The APIs by key; two with one key is a wiring fault. */
export function apisByKey(apis: readonly KafkaApi[]): Map<number, KafkaApi> {
  const byKey = new Map<number, KafkaApi>();
  for (const api of apis) {
    assert(!byKey.has(api.apiKey), `API key ${api.apiKey} is served once`);
    byKey.set(api.apiKey, api);
  }
  return byKey;
}

/**
 * One connection's SASL/PLAIN state (`[kafka] users`): before it has authenticated, only
 * ApiVersions, SaslHandshake and SaslAuthenticate are served, and any other request closes the
 * connection. A SaslHandshake v0 is answered UNSUPPORTED_VERSION. A SaslAuthenticate before a PLAIN
 * handshake is answered ILLEGAL_SASL_STATE, and wrong
 * credentials SASL_AUTHENTICATION_FAILED, each answer followed by the connection's close. Without
 * users every request passes, and SaslAuthenticate is an illegal state.
 */
export class SaslGate {
  readonly #users: ReadonlyMap<string, string>;
  readonly #logger: Logger;
  readonly #remote: string;
  #handshaken = false;
  #user: string | null = null;

  constructor(users: ReadonlyMap<string, string>, logger: Logger, remoteAddress: string) {
    this.#users = users;
    this.#logger = logger;
    this.#remote = remoteAddress;
  }

  /** Whether requests of `api` may be served now; throws (closing the connection) when never. */
  check(api: number): void {
    if (this.#users.size === 0 || this.#user !== null) return;
    if (api === apiKey.apiVersions || api === apiKey.saslHandshake || api === apiKey.saslAuthenticate) return;
    // A cluster's nodes present their own credentials in each replica fetch.
    if (api === replicaFetchApiKey) return;
    throw new KafkaProtocolError(
      "unauthenticated",
      `Cannot serve API key ${api}: the connection has not authenticated`,
    );
  }

  /** Answers a SaslHandshake: a PLAIN one, with users set, lets a SaslAuthenticate follow. */
  handshake(header: RequestHeader, body: KafkaReader): KafkaAnswer {
    const offered = this.#users.size > 0;
    const mechanism = body.string();
    // Version 0 would be followed by raw SASL frames, which are not served.
    const refusal = header.apiVersion === 0
      ? kafkaErrorCode.unsupportedVersion
      : kafkaErrorCode.unsupportedSaslMechanism;
    this.#handshaken = header.apiVersion >= 1 && mechanism === plainMechanism && offered;
    return {
      pieces: [encodeSaslHandshakeResponse(header, this.#handshaken, offered, refusal)],
      errorCount: this.#handshaken ? 0 : 1,
    };
  }

  /** Answers a SaslAuthenticate; a refusal closes the connection once written. */
  authenticate(header: RequestHeader, body: KafkaReader): KafkaAnswer {
    const token = readSaslAuthenticate(header.apiVersion, body);
    if (!this.#handshaken || this.#user !== null) {
      return refusal(
        header,
        kafkaErrorCode.illegalSaslState,
        "SaslAuthenticate needs a PLAIN SaslHandshake first",
        "sasl_state",
      );
    }
    const user = authenticatePlain(token, this.#users);
    if (user === null) {
      this.#logger.warn("Kafka authentication failed", { remote: this.#remote });
      return refusal(
        header,
        kafkaErrorCode.saslAuthenticationFailed,
        "Authentication failed: invalid username or password",
        "authentication_failed",
      );
    }
    this.#user = user;
    this.#logger.info("Kafka client authenticated", { remote: this.#remote, user });
    return { pieces: [encodeSaslAuthenticateResponse(header, kafkaErrorCode.none, null)], errorCount: 0 };
  }
}

function refusal(header: RequestHeader, errorCode: number, message: string, reason: string): KafkaAnswer {
  return {
    pieces: [encodeSaslAuthenticateResponse(header, errorCode, message)],
    errorCount: 1,
    closeAfter: reason,
  };
}
