import t from "tap";
import { latenessBetween, readLatenessScrape } from "../../scripts/lib/lateness_scrape.ts";

/** A page as the server writes it for two shards: ticks per bucket, the max gauge, missed ticks. */
function page(counts: [number, number, number, number], maxSeconds: number, missed: number): string {
  const bounds = ["0.001", "0.002", "0.01", "+Inf"];
  const cumulative = counts.map((_, i) => counts.slice(0, i + 1).reduce((a, b) => a + b, 0));
  return [
    "# TYPE strata_pump_tick_lateness_seconds histogram",
    ...bounds.map((le, i) =>
      `strata_pump_tick_lateness_seconds_bucket{le="${le}",shard="0"} ${cumulative[i]}`
    ),
    ...bounds.map((le) => `strata_pump_tick_lateness_seconds_bucket{le="${le}",shard="1"} 5`),
    `strata_pump_tick_lateness_max_seconds{shard="0"} ${maxSeconds}`,
    `strata_pump_tick_lateness_max_seconds{shard="1"} 9`,
    `strata_pump_missed_ticks_total{shard="0"} ${missed}`,
  ].join("\n");
}

// The window holds only the ticks between the scrapes, of the shard asked for; its max is the later
// scrape's gauge, which covers exactly that window.
t.test("latenessBetween reads one shard's window from two scrapes", (t) => {
  const start = readLatenessScrape(page([500, 10, 0, 0], 0.04, 3), "0");
  t.equal(start.maxMs, 40);
  const end = readLatenessScrape(page([590, 15, 5, 0], 0.0085, 3), "0");
  const window = latenessBetween(start, end);
  // 100 ticks in the window: 90 under 1 ms, 5 from 1 to 2, 5 from 2 to 10; rank 99 is the fourth of the last five.
  t.equal(window.ticks, 100);
  t.equal(window.p99_bucket_upper_ms, 10);
  t.equal(window.p99_ms, 8.4, "2 ms + 8 ms × 4/5, under the max of 8.5");
  t.equal(window.max_ms, 8.5);
  t.equal(window.missed_ticks, 0);
  t.end();
});

// The p99 is interpolated in a bucket, so it could land above the window's true max: it is capped.
t.test("the window's p99 is never reported above its max", (t) => {
  const start = readLatenessScrape(page([0, 0, 0, 0], 0, 0), "0");
  const end = readLatenessScrape(page([0, 0, 100, 0], 0.003, 1), "0");
  const window = latenessBetween(start, end);
  t.equal(window.p99_ms, 3);
  t.equal(window.missed_ticks, 1);
  t.end();
});

t.test("a scrape without the shard's max gauge, or a window without ticks, is refused", (t) => {
  t.throws(
    () => readLatenessScrape(page([1, 0, 0, 0], 0, 0), "7"),
    /no strata_pump_tick_lateness_max_seconds for shard 7/,
  );
  const same = readLatenessScrape(page([1, 0, 0, 0], 0, 0), "0");
  t.throws(() => latenessBetween(same, same), /no tick fired between two scrapes/);
  t.end();
});
