import type { Logger } from "../runtime/logger.ts";
import type { KafkaAnswer } from "./kafka_api.ts";
import { kafkaErrorCode } from "./kafka_error_code.ts";
import type { KafkaReader } from "./kafka_reader.ts";
import { KafkaProtocolError } from "./kafka_session.ts";
import { authenticatePlain } from "./sasl_plain.ts";
import {
  encodeSaslAuthenticateResponse,
  encodeSaslHandshakeResponse,
  plainMechanism,
  readSaslAuthenticate,
} from "./sasl_apis.ts";
import { apiKey, type RequestHeader } from "./request_header.ts";
import { replicaFetchApiKey } from "./replica_fetch_wire.ts";

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
