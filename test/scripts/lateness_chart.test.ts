import t from "tap";
import { latenessChartSvg } from "../../scripts/lib/lateness_chart.ts";

t.test("the chart draws one line per phase, labelled, and reduces long series to bounded points", (t) => {
  const samples = Array.from(
    { length: 100_000 },
    (_, i) => ({ atS: i / 10_000, latenessMs: i === 50_000 ? 500 : 1 }),
  );
  const svg = latenessChartSvg([
    { name: "idle", samples, durationS: 10 },
    { name: "naive", samples: [], durationS: 10 },
  ], "t");
  t.equal((svg.match(/<polyline/g) ?? []).length, 1, "a phase without samples draws no line");
  t.match(svg, />idle</);
  t.match(svg, />naive</);
  const points = /points="([^"]*)"/.exec(svg)![1]!.split(" ");
  t.ok(points.length <= 400, `${points.length} points for 100,000 samples`);
  const ys = points.map((p) => Number(p.split(",")[1]));
  t.ok(Math.min(...ys) < Math.max(...ys), "the 500 ms spike stands out of the 1 ms baseline");
  t.end();
});
