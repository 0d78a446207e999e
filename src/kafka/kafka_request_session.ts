import { assert } from "../runtime/assert.ts";
import type { ApiVersionRange } from "./api_versions.ts";
import type { KafkaAnswer, KafkaApi, KafkaServing } from "./kafka_api.ts";
import type { KafkaMetrics } from "./kafka_metrics.ts";
import { KafkaProtocolError, type KafkaResponse, type KafkaSession } from "./kafka_session.ts";
import { apiKey, readRequestHeader, type RequestHeader } from "./request_header.ts";
import { SaslGate } from "./sasl_gate.ts";
import type { KafkaReader } from "./kafka_reader.ts";

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
