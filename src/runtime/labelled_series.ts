import { assert } from "./assert.ts";
import type { Registry } from "./metrics.ts";
import { yieldToReactor } from "./yield_to_reactor.ts";

/** Series written between two yields to the event loop while a scrape writes labelled gauges. */
export const seriesPerPieceMax = 256;

/** Bound on the labelled gauges one registry holds. */
const seriesSetsMax = 16;

/** A gauge with one label whose values are read at scrape time, one series per entry. */
export interface LabelledGauge {
  name: string;
  help: string;
  labelName: string;
  entries(): Iterable<[string, number]>;
}

/**
 * Gauges with one series per partition, written in the Prometheus text format a piece at a time.
 * prom-client formats a metric's series in one synchronous stretch: at ten thousand partitions and
 * three such gauges that took over 100 ms of the event loop per scrape, so these are written here,
 * `seriesPerPieceMax` series between yields, and appended to the registry's text.
 */
export class LabelledGauges {
  readonly #gauges: LabelledGauge[] = [];

  add(gauge: LabelledGauge): void {
    assert(
      /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(gauge.name),
      `Cannot add gauge ${gauge.name}: not a metric name`,
    );
    assert(this.#gauges.length < seriesSetsMax, `Cannot add gauge ${gauge.name}: ${seriesSetsMax} already`);
    this.#gauges.push(gauge);
  }

  /** The gauges' text, yielding to the event loop every `seriesPerPieceMax` series. */
  async text(): Promise<string> {
    // Each piece's lines are joined in that piece, so no step joins every series at once.
    const pieces: string[] = [];
    let lines: string[] = [];
    for (const gauge of this.#gauges) {
      lines.push(`# HELP ${gauge.name} ${escapeHelp(gauge.help)}\n# TYPE ${gauge.name} gauge\n`);
      for (const [label, value] of gauge.entries()) {
        lines.push(`${gauge.name}{${gauge.labelName}="${escapeLabel(label)}"} ${formatValue(value)}\n`);
        if (lines.length < seriesPerPieceMax) continue;
        pieces.push(lines.join(""));
        lines = [];
        await yieldToReactor();
      }
    }
    pieces.push(lines.join(""));
    return pieces.join("");
  }
}

const byRegistry = new WeakMap<Registry, LabelledGauges>();

/** The labelled gauges scraped with `registry` (one set per registry, made on first use). */
export function labelledGaugesOf(registry: Registry): LabelledGauges {
  let gauges = byRegistry.get(registry);
  if (gauges === undefined) {
    gauges = new LabelledGauges();
    byRegistry.set(registry, gauges);
  }
  return gauges;
}

/** The registry's text and its labelled gauges', as `/metrics` answers. */
export async function scrapeText(registry: Registry): Promise<string> {
  const text = await registry.metrics();
  const labelled = await labelledGaugesOf(registry).text();
  if (labelled === "") return text;
  return text.endsWith("\n") || text === "" ? text + labelled : `${text}\n${labelled}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}
