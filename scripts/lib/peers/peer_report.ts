import { round, type RunFigures } from "./peer_run.ts";

/**
 * bench:peers's report: each variant's medians over the rounds, the JSON the issue's readers expect
 * (`{modes: {page_cache: {strata, strata_kafkajs, nats, rabbitmq}, durable: {strata}}}`), the targets
 * judged on the medians, a text table and an SVG of the throughputs side by side.
 */

/** One variant's medians over the rounds. */
export interface VariantSummary {
  client: string;
  rounds: number;
  produce_mb_s: number;
  produce_records_s: number;
  produce_p50_ms: number;
  produce_p99_ms: number;
  consume_mb_s: number;
  consume_records_s: number;
  /** Server CPU seconds per GB moved: produced and consumed together, then each phase's. */
  server_cpu_s_per_gb: number;
  produce_server_cpu_s_per_gb: number;
  consume_server_cpu_s_per_gb: number;
  produce_client_cpu_s: number;
  consume_client_cpu_s: number;
  peak_rss_mb: number;
  /** Strata only. */
  tick_lateness_ms?: { idle_p99: number; idle_max: number; produce_p99: number; produce_max: number };
  /** Strata only: its event loop's thread while producing, ms per s on a core and waiting for one. */
  loop_thread_produce?: { on_cpu_ms_per_s: number; runqueue_wait_ms_per_s: number };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function summarize(client: string, runs: readonly RunFigures[]): VariantSummary {
  const m = (pick: (r: RunFigures) => number) => round(median(runs.map(pick)));
  const summary: VariantSummary = {
    client,
    rounds: runs.length,
    produce_mb_s: m((r) => r.produce.mb_s),
    produce_records_s: m((r) => r.produce.records_s),
    produce_p50_ms: m((r) => r.produce.p50_ms ?? 0),
    produce_p99_ms: m((r) => r.produce.p99_ms ?? 0),
    consume_mb_s: m((r) => r.consume.mb_s),
    consume_records_s: m((r) => r.consume.records_s),
    server_cpu_s_per_gb: m((r) => (r.produce.server_cpu_s + r.consume.server_cpu_s) / (2 * movedGb(r))),
    produce_server_cpu_s_per_gb: m((r) => r.produce.server_cpu_s / movedGb(r)),
    consume_server_cpu_s_per_gb: m((r) => r.consume.server_cpu_s / movedGb(r)),
    produce_client_cpu_s: m((r) => r.produce.client_cpu_s),
    consume_client_cpu_s: m((r) => r.consume.client_cpu_s),
    peak_rss_mb: m((r) => r.peak_rss_mb),
  };
  if (runs.every((r) => r.tick_lateness_ms !== undefined)) {
    summary.tick_lateness_ms = {
      idle_p99: m((r) => r.tick_lateness_ms!.idle.p99_ms),
      idle_max: m((r) => r.tick_lateness_ms!.idle.max_ms),
      produce_p99: m((r) => r.tick_lateness_ms!.produce.p99_ms),
      produce_max: m((r) => r.tick_lateness_ms!.produce.max_ms),
    };
  }
  if (runs.every((r) => r.loop_thread_produce !== undefined)) {
    summary.loop_thread_produce = {
      on_cpu_ms_per_s: m((r) => r.loop_thread_produce!.on_cpu_ms_per_s),
      runqueue_wait_ms_per_s: m((r) => r.loop_thread_produce!.runqueue_wait_ms_per_s),
    };
  }
  return summary;
}

/** The gigabytes a run produced (and consumed back: the same records). */
function movedGb(r: RunFigures): number {
  const gb = r.produce.bytes / 1e9;
  return gb > 0 ? gb : Infinity;
}

export type Report = Record<string, Record<string, VariantSummary>>;

export interface TargetOutcome {
  target: string;
  value: number;
  limit: number;
  met: boolean;
}

/**
 * The targets, on the medians: page cache produce and consume at least 1.5 × the faster peer's and
 * server CPU per GB at most 0.5 × the lower peer's; durable produce at least the faster peer's page
 * cache produce; the tick's produce p99 at most its idle p99 + 2 ms. A target whose peers are all
 * missing is not judged.
 */
export function judgeTargets(report: Report): TargetOutcome[] {
  const pageCache = report["page_cache"] ?? {};
  const strata = pageCache["strata"];
  const peers = ["nats", "rabbitmq"].map((k) => pageCache[k]).filter((p) => p !== undefined);
  const outcomes: TargetOutcome[] = [];
  const add = (target: string, value: number, limit: number, atLeast: boolean) =>
    outcomes.push({ target, value, limit: round(limit), met: atLeast ? value >= limit : value <= limit });
  if (strata !== undefined && peers.length > 0) {
    add(
      "page cache produce MB/s ≥ 1.5 × the faster peer's",
      strata.produce_mb_s,
      1.5 * Math.max(...peers.map((p) => p.produce_mb_s)),
      true,
    );
    add(
      "page cache consume MB/s ≥ 1.5 × the faster peer's",
      strata.consume_mb_s,
      1.5 * Math.max(...peers.map((p) => p.consume_mb_s)),
      true,
    );
    add(
      "server CPU s per GB ≤ 0.5 × the lower peer's",
      strata.server_cpu_s_per_gb,
      0.5 * Math.min(...peers.map((p) => p.server_cpu_s_per_gb)),
      false,
    );
    const durable = report["durable"]?.["strata"];
    if (durable !== undefined) {
      add(
        "durable produce MB/s ≥ the faster peer's page cache produce",
        durable.produce_mb_s,
        Math.max(...peers.map((p) => p.produce_mb_s)),
        true,
      );
    }
  }
  if (strata?.tick_lateness_ms !== undefined) {
    const t = strata.tick_lateness_ms;
    add("tick p99 while producing ≤ idle p99 + 2 ms", t.produce_p99, t.idle_p99 + 2, false);
  }
  return outcomes;
}

/** The report as a table, one line per variant. */
export function reportTable(report: Report): string {
  const lines = [
    "mode        server          produce MB/s  rec/s     p50/p99 ms     consume MB/s  server CPU s/GB  client CPU s  RSS MB",
  ];
  for (const [mode, servers] of Object.entries(report)) {
    for (const [key, s] of Object.entries(servers)) {
      lines.push(
        `${mode.padEnd(12)}${key.padEnd(16)}${String(s.produce_mb_s).padStart(12)}  ${
          String(s.produce_records_s).padStart(8)
        }  ${`${s.produce_p50_ms}/${s.produce_p99_ms}`.padStart(13)}  ${
          String(s.consume_mb_s).padStart(12)
        }  ${String(s.server_cpu_s_per_gb).padStart(15)}  ${String(s.produce_client_cpu_s).padStart(12)}  ${
          String(s.peak_rss_mb).padStart(6)
        }`,
      );
    }
  }
  for (const [mode, servers] of Object.entries(report)) {
    for (const [key, s] of Object.entries(servers)) {
      const t = s.tick_lateness_ms;
      const loop = s.loop_thread_produce;
      if (t === undefined) continue;
      lines.push(
        `${mode}/${key}: tick p99/max ${t.idle_p99}/${t.idle_max} ms at rest, ${t.produce_p99}/${t.produce_max} ms producing` +
          (loop === undefined
            ? ""
            : `; loop thread producing: ${loop.on_cpu_ms_per_s} ms/s on a core, ${loop.runqueue_wait_ms_per_s} ms/s waiting for one`),
      );
    }
  }
  return lines.join("\n");
}

/** Produce and consume MB/s of every variant, as grouped bars. */
export function throughputSvg(report: Report): string {
  const bars = Object.entries(report).flatMap(([mode, servers]) =>
    Object.entries(servers).map(([key, s]) => ({
      label: `${key} (${mode})`,
      produce: s.produce_mb_s,
      consume: s.consume_mb_s,
    }))
  );
  const width = 760;
  const rowHeight = 44;
  const height = 60 + bars.length * rowHeight;
  const max = Math.max(1, ...bars.flatMap((b) => [b.produce, b.consume]));
  const scale = (v: number) => (v / max) * (width - 260);
  const rows = bars.map((b, i) => {
    const y = 40 + i * rowHeight;
    return [
      `<text x="10" y="${y + 16}" font-size="12">${escapeXml(b.label)}</text>`,
      `<rect x="220" y="${y}" width="${scale(b.produce).toFixed(1)}" height="16" fill="#3b7dd8"/>`,
      `<text x="${(224 + scale(b.produce)).toFixed(1)}" y="${
        y + 12
      }" font-size="11">${b.produce} MB/s produce</text>`,
      `<rect x="220" y="${y + 18}" width="${scale(b.consume).toFixed(1)}" height="16" fill="#e08a2e"/>`,
      `<text x="${(224 + scale(b.consume)).toFixed(1)}" y="${
        y + 30
      }" font-size="11">${b.consume} MB/s consume</text>`,
    ].join("");
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="22" font-size="14">bench:peers: produce and consume throughput (medians)</text>`,
    ...rows,
    "</svg>",
  ].join("\n");
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
