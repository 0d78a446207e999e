import t from "tap";
import { anomaliesMax, checkHistory, type History } from "../../scripts/lib/log_history.ts";

const acked = (value: string, offset: number) => ({ value, outcome: { kind: "acked" as const, offset } });
const final = (...values: string[]) => values.map((value, offset) => ({ offset, value }));

t.test("a clean history is valid, with its counts", (t) => {
  const history: History = {
    sends: [acked("a", 0), acked("b", 1), { value: "c", outcome: { kind: "unknown" } }, {
      value: "d",
      outcome: { kind: "failed" },
    }],
    consumers: [{
      consumer: "c1",
      polls: [[{ offset: 0, value: "a" }], [{ offset: 1, value: "b" }, { offset: 2, value: "c" }]],
    }],
    final: final("a", "b", "c"),
  };
  const verdict = checkHistory(history);
  t.equal(verdict.valid, true);
  t.same(verdict.counts, { acked: 2, failed: 1, unknown: 1, final: 3, polled: 3 });
  t.end();
});

t.test("every anomaly is named: lost, misplaced, duplicated, going back, served then truncated", (t) => {
  const history: History = {
    sends: [acked("a", 0), acked("b", 1), acked("lost", 2), acked("moved", 3)],
    consumers: [{
      consumer: "c1",
      polls: [[{ offset: 0, value: "a" }, { offset: 1, value: "b" }], [{ offset: 1, value: "b" }], [{
        offset: 2,
        value: "ghost",
      }]],
    }],
    final: final("a", "b", "x", "y", "moved", "a"),
  };
  const kinds = checkHistory(history).anomalies.map((a) => a.kind).sort();
  t.same(kinds, ["duplicate", "lost", "nonmonotonic", "served_then_truncated", "wrong_offset"]);
  t.end();
});

t.test("a broken run reports at most anomaliesMax anomalies", (t) => {
  const sends = Array.from({ length: 500 }, (_, i) => acked(`v${i}`, i));
  const verdict = checkHistory({ sends, consumers: [], final: [] });
  t.equal(verdict.valid, false);
  t.equal(verdict.anomalies.length, anomaliesMax);
  t.end();
});
