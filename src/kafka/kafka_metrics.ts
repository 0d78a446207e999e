import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** The Kafka listener's metrics; one instance per registry. */
export class KafkaMetrics {
  /** Requests by API name ("produce", "fetch", …; "unknown" for a key not served). */
  readonly requests: Counter<"api">;
  /** Requests whose answer carried an error code, or that closed their connection. */
  readonly errors: Counter<"api">;
  readonly latency: Histogram<"api">;
  readonly connections: Gauge;
  /** Connections the server closed, by reason ("malformed_frame", "unknown_api", …). */
  readonly connectionsClosed: Counter<"reason">;
  /** Connections closed as they were accepted, past `max_connections`. */
  readonly connectionsRefused: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({
      name: "strata_kafka_requests_total",
      help: "Kafka requests handled, by API.",
      labelNames: ["api"],
      registers,
    });
    this.errors = new Counter({
      name: "strata_kafka_request_errors_total",
      help: "Kafka requests answered with an error code or that closed their connection, by API.",
      labelNames: ["api"],
      registers,
    });
    this.latency = new Histogram({
      name: "strata_kafka_request_duration_seconds",
      help: "Time from a Kafka request's frame being whole to its answer being ready, by API.",
      labelNames: ["api"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.connections = new Gauge({
      name: "strata_kafka_connections",
      help: "Kafka connections open.",
      registers,
    });
    this.connectionsClosed = new Counter({
      name: "strata_kafka_connections_closed_total",
      help: "Kafka connections the server closed for bad input or a fault, by reason.",
      labelNames: ["reason"],
      registers,
    });
    this.connectionsRefused = new Counter({
      name: "strata_kafka_connections_refused_total",
      help: "Kafka connections closed as accepted because max_connections were open.",
      registers,
    });
  }
}
