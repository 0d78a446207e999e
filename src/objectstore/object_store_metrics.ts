import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export type OpKind = "put" | "get" | "head" | "list" | "delete";

/** Object-store metrics per operation kind; one instance per registry. */
export class ObjectStoreMetrics {
  readonly requests: Counter<"op">;
  readonly errors: Counter<"op" | "class">;
  readonly retries: Counter<"op" | "profile">;
  readonly bytesSent: Counter<"op">;
  readonly bytesReceived: Counter<"op">;
  readonly latency: Histogram<"op">;
  readonly responses: Counter<"op" | "status">;
  readonly inFlight: Gauge<"op">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({
      name: "strata_objectstore_requests_total",
      help: "Attempts made.",
      labelNames: ["op"],
      registers,
    });
    this.errors = new Counter({
      name: "strata_objectstore_errors_total",
      help: "Failed attempts by error class.",
      labelNames: ["op", "class"],
      registers,
    });
    this.retries = new Counter({
      name: "strata_objectstore_retries_total",
      help: "Retries by profile (transient, non_transient).",
      labelNames: ["op", "profile"],
      registers,
    });
    this.bytesSent = new Counter({
      name: "strata_objectstore_sent_bytes_total",
      help: "Body bytes sent.",
      labelNames: ["op"],
      registers,
    });
    this.bytesReceived = new Counter({
      name: "strata_objectstore_received_bytes_total",
      help: "Body bytes received.",
      labelNames: ["op"],
      registers,
    });
    this.latency = new Histogram({
      name: "strata_objectstore_request_duration_seconds",
      help: "Duration of one attempt.",
      labelNames: ["op"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 90],
      registers,
    });
    this.responses = new Counter({
      name: "strata_objectstore_responses_total",
      help: "Error responses by HTTP status (403, 500, 503, …).",
      labelNames: ["op", "status"],
      registers,
    });
    this.inFlight = new Gauge({
      name: "strata_objectstore_requests_in_flight",
      help: "Attempts under way.",
      labelNames: ["op"],
      registers,
    });
  }
}
