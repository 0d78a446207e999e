import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** What a chunk cache reports at scrape time. */
export interface CacheGaugeSource {
  readonly budgetBytes: number;
  readonly usedBytes: number;
  readonly chunkCount: number;
}

/** The chunk caches' metrics, shared by every shard's cache in one registry. */
export class CacheMetrics {
  readonly hits: Counter;
  readonly misses: Counter;
  readonly fetchedBytes: Counter;
  readonly evictions: Counter;
  readonly checksumFailures: Counter;
  readonly corruptChunkFiles: Counter;
  readonly transientReplies: Counter;
  readonly hydrations: Counter<"kind">;
  readonly reservationRefusals: Counter;
  readonly fetchSeconds: Histogram<"kind">;
  readonly dataLoss: Counter;
  readonly #sources = new Set<CacheGaugeSource>();

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = (name: string, help: string) => new Counter({ name, help, registers });
    this.hits = counter("strata_cache_hits_total", "Chunk reads served from the cache.");
    this.misses = counter(
      "strata_cache_misses_total",
      "Chunk reads that needed a GET (shared fetches count once).",
    );
    this.fetchedBytes = counter("strata_cache_fetched_bytes_total", "Bytes downloaded into the cache.");
    this.evictions = counter("strata_cache_evictions_total", "Chunks trimmed from the cache.");
    this.checksumFailures = counter(
      "strata_cache_checksum_failures_total",
      "Remote chunks whose batches failed their CRC32C (dropped and fetched again).",
    );
    this.corruptChunkFiles = counter(
      "strata_cache_corrupt_chunk_files_total",
      "Cached chunk files shorter than their chunk (truncated on disk): dropped and fetched again.",
    );
    this.transientReplies = counter(
      "strata_cache_transient_replies_total",
      "Polls answered 503 transient: fetch_timeout passed or the cache was full.",
    );
    this.hydrations = new Counter({
      name: "strata_cache_hydrations_total",
      help:
        "Chunks fetched in the background: after a cold poll's first range (hydration) or ahead of a reader (readahead).",
      labelNames: ["kind"],
      registers,
    });
    this.reservationRefusals = new Counter({
      name: "strata_cache_reservation_refusals_total",
      help:
        "Downloads refused because fetches in flight held the whole budget (the poll answered 503 transient).",
      registers,
    });
    this.fetchSeconds = new Histogram({
      name: "strata_cache_fetch_seconds",
      help: "Duration of one GET: a cold poll's first range (first) or a whole chunk (chunk).",
      labelNames: ["kind"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.dataLoss = counter(
      "strata_tier_data_loss_total",
      "Reads that found an object missing above deleted_up_to_offset: data loss, answered 502.",
    );
    registerGauges(registers, this.#sources);
  }

  addSource(source: CacheGaugeSource): void {
    this.#sources.add(source);
  }
}

/** The size gauges, summed over every cache's source at scrape time. */
function registerGauges(registers: Registry[], sources: ReadonlySet<CacheGaugeSource>): void {
  new Gauge({
    name: "strata_cache_size_bytes",
    help: "Bytes held by the chunk caches.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.usedBytes, 0));
    },
  });
  new Gauge({
    name: "strata_cache_budget_bytes",
    help: "The chunk caches' budget: the smaller of size and size_percent of the data disk.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.budgetBytes, 0));
    },
  });
  new Gauge({
    name: "strata_cache_chunks",
    help: "Chunk files held by the chunk caches.",
    registers,
    collect() {
      this.set([...sources].reduce((n, s) => n + s.chunkCount, 0));
    },
  });
}
