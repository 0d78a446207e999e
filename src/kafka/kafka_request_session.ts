import { assert } from "../runtime/assert.ts";
import type { ApiVersionRange } from "./api_versions.ts";
import type { KafkaApi, KafkaServing } from "./kafka_api.ts";
import type { KafkaMetrics } from "./kafka_metrics.ts";
import { KafkaProtocolError, type KafkaResponse, type KafkaSession } from "./kafka_session.ts";
import { apiKey, readRequestHeader } from "./request_header.ts";

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

  constructor(apis: ReadonlyMap<number, KafkaApi>, serving: KafkaServing, metrics: KafkaMetrics) {
    this.#apis = apis;
    this.#serving = serving;
    this.#metrics = metrics;
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
      const answer = await api.handle(header, body, this.#serving);
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
