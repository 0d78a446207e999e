import type { HousekeepingMetrics } from "./housekeeping_metrics.ts";

/** Thrown when a job would spend more than the run's quota; jobs check `left` first, so this is a bug guard. */
export class QuotaSpentError extends Error {
  override name = "QuotaSpentError";
  constructor() {
    super("Cannot spend a request: the housekeeping run's request_quota is spent");
  }
}

/** The store requests one housekeeping run may still make, out of its `request_quota`. */
export class RequestBudget {
  #left: number;
  readonly #metrics: HousekeepingMetrics | undefined;

  constructor(requests: number, metrics: HousekeepingMetrics | undefined) {
    this.#left = requests;
    this.#metrics = metrics;
  }

  get left(): number {
    return this.#left;
  }

  /** Ends the run: every job stops before its next request. */
  exhaust(): void {
    this.#left = 0;
  }

  /** Spends `requests` (counted in `strata_housekeeping_requests_total`); more than is left is a bug. */
  take(requests = 1): void {
    if (this.#left < requests) throw new QuotaSpentError();
    this.#left -= requests;
    this.#metrics?.requests.inc(requests);
  }
}
