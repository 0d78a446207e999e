import t from "tap";
import { Gauge } from "prom-client";
import {
  LabelledGauges,
  labelledGaugesOf,
  scrapePieces,
  scrapeText,
  seriesPerPieceMax,
} from "../../../src/runtime/metrics/labelled_series.ts";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";

t.test("labelled gauges are written in the text format, escaped, after the registry's own", async (t) => {
  const registry = createMetricsRegistry();
  new Gauge({ name: "plain_total", help: "a plain gauge", registers: [registry] }).set(3);
  labelledGaugesOf(registry).add({
    name: "per_partition_bytes",
    help: "bytes\nper partition",
    labelName: "partition",
    entries: () => [["s/t/0", 10], ['we"ird\\name', NaN], ["inf", Infinity]],
  });
  const text = await scrapeText(registry);
  t.match(text, /^# HELP plain_total a plain gauge\n# TYPE plain_total gauge\nplain_total 3\n/);
  t.match(text, /# HELP per_partition_bytes bytes\\nper partition\n# TYPE per_partition_bytes gauge\n/);
  t.match(text, /per_partition_bytes\{partition="s\/t\/0"\} 10\n/);
  t.match(text, /per_partition_bytes\{partition="we\\"ird\\\\name"\} NaN\n/);
  t.match(text, /per_partition_bytes\{partition="inf"\} \+Inf\n/);
  t.equal(labelledGaugesOf(registry), labelledGaugesOf(registry), "one set per registry");
  t.not(labelledGaugesOf(createMetricsRegistry()), labelledGaugesOf(registry));
  t.throws(() => new LabelledGauges().add({ name: "bad name", help: "", labelName: "p", entries: () => [] }));
});

t.test("a scrape of many series lets the event loop turn every seriesPerPieceMax series", async (t) => {
  const gauges = new LabelledGauges();
  let turns = 0;
  let counting = true;
  const turn = () => {
    turns++;
    if (counting) setImmediate(turn);
  };
  const turnsAtSeries: number[] = [];
  gauges.add({
    name: "many",
    help: "many series",
    labelName: "partition",
    *entries() {
      for (let i = 0; i < 4 * seriesPerPieceMax; i++) {
        turnsAtSeries.push(turns);
        yield [String(i), i];
      }
    },
  });
  setImmediate(turn);
  const text = await gauges.text();
  counting = false;
  t.equal(text.split("\n").filter((l) => l.startsWith("many{")).length, 4 * seriesPerPieceMax);
  const distinct = new Set(turnsAtSeries).size;
  t.ok(distinct >= 4, `the series were written over ${distinct} turns of the loop`);
});

t.test("a scrape answers UTF-8 pieces of at most seriesPerPieceMax series each, never one joined string", async (t) => {
  const registry = createMetricsRegistry();
  const count = 2 * seriesPerPieceMax + 1;
  labelledGaugesOf(registry).add({
    name: "per_partition",
    help: "h",
    labelName: "partition",
    *entries() {
      for (let i = 0; i < count; i++) yield [`p${i}é`, i];
    },
  });
  const pieces = await scrapePieces(registry);
  t.ok(pieces.every((p) => p instanceof Uint8Array), "bytes, not strings");
  const seriesPerPiece = pieces.map((p) =>
    new TextDecoder().decode(p).split("\n").filter((l) => l.startsWith("per_partition{")).length
  );
  const series = seriesPerPiece.slice(1);
  t.ok(series.every((n) => n <= seriesPerPieceMax), `at most ${seriesPerPieceMax} series a piece: ${series}`);
  t.equal(series.reduce((a, b) => a + b, 0), count, "every series, after the registry's own text");
  t.equal(series.length, 3, "in three pieces");
  t.equal(
    new TextDecoder().decode(new Uint8Array(await new Blob(pieces).arrayBuffer())),
    await scrapeText(registry),
  );
});
