import { assert } from "../assert.ts";
import { concatBytes } from "../memory/buffers.ts";
import type { Registry } from "./metrics.ts";
import { yieldToReactor } from "../cooperation/piece_gate.ts";

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

  /**
   * The gauges in the text format as UTF-8 pieces, yielding to the event loop every
   * `seriesPerPieceMax` series. Each piece is encoded as soon as its lines are joined, so its string
   * dies young: at ten thousand partitions a scrape whose pieces stayed strings until the answer was
   * joined moved about 6 MB into the old generation, and every third or fourth scrape brought a full
   * collection with it.
   */
  async pieces(): Promise<Uint8Array<ArrayBuffer>[]> {
    const pieces: Uint8Array<ArrayBuffer>[] = [];
    let lines: string[] = [];
    for (const gauge of this.#gauges) {
      lines.push(`# HELP ${gauge.name} ${escapeHelp(gauge.help)}\n# TYPE ${gauge.name} gauge\n`);
      for (const [label, value] of gauge.entries()) {
        lines.push(`${gauge.name}{${gauge.labelName}="${escapeLabel(label)}"} ${formatValue(value)}\n`);
        if (lines.length < seriesPerPieceMax) continue;
        pieces.push(utf8.encode(lines.join("")));
        lines = [];
        await yieldToReactor();
      }
    }
    if (lines.length > 0) pieces.push(utf8.encode(lines.join("")));
    return pieces;
  }

  /** The gauges' text (for tests and tools; `/metrics` answers the pieces). */
  async text(): Promise<string> {
    return new TextDecoder().decode(concatBytes(await this.pieces()));
  }
}

const utf8 = new TextEncoder();

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

/** The registry's text and its labelled gauges', as UTF-8 pieces: what `/metrics` answers. */
export async function scrapePieces(registry: Registry): Promise<Uint8Array<ArrayBuffer>[]> {
  const text = await registry.metrics();
  const labelled = await labelledGaugesOf(registry).pieces();
  const separator = text === "" || text.endsWith("\n") || labelled.length === 0 ? "" : "\n";
  return [utf8.encode(text + separator), ...labelled];
}

/** The same as one string. */
export async function scrapeText(registry: Registry): Promise<string> {
  return new TextDecoder().decode(concatBytes(await scrapePieces(registry)));
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
