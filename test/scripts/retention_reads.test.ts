import t from "tap";
import { medianRound, type RoundFigures } from "../../scripts/lib/retention_reads.ts";

const tick = (p99: number) => ({
  p99_ms: p99,
  p99_bucket_upper_ms: 5,
  max_ms: p99,
  ticks: 100,
  missed_ticks: 0,
});

function roundOf(local: number, cold: number, warm: number, coldTickP99: number): RoundFigures {
  return {
    local_mb_s: local,
    cold_mb_s: cold,
    warm_mb_s: warm,
    cold_vs_local: Math.round((cold / local) * 100) / 100,
    warm_vs_local: Math.round((warm / local) * 100) / 100,
    tick_local: tick(2),
    tick_cold: tick(coldTickP99),
    cpu_ms_by_thread: { local: { loop: local }, cold: { loop: cold }, warm: { loop: warm } },
  };
}

t.test("the rounds' median takes each ratio on its own, and the ticks of the median cold round", (t) => {
  const rounds = [roundOf(400, 200, 380, 9), roundOf(300, 210, 330, 3), roundOf(350, 150, 300, 4)];
  const median = medianRound(rounds);
  t.equal(median.local_mb_s, 350);
  t.equal(median.cold_vs_local, 0.5, "cold ÷ local of 0.5, 0.7 and 0.43");
  t.equal(median.warm_vs_local, 0.95, "warm ÷ local of 0.95, 1.1 and 0.86");
  t.equal(median.tick_cold.p99_ms, 9, "the ticks of the round whose cold ratio is the median");
  t.same(median.cpu_ms_by_thread.cold, { loop: 200 });
  t.equal(medianRound([rounds[1]!, rounds[0]!]).cold_vs_local, 0.5, "an even count takes the lower middle");
  t.throws(() => medianRound([]), /no rounds/);
  t.end();
});
