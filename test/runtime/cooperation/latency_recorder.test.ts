import t from "tap";
import { LatencyRecorder } from "../../../src/runtime/cooperation/pump_metrics.ts";

t.test("percentiles are never reported above the largest value recorded", (t) => {
  const recorder = new LatencyRecorder();
  recorder.recordMs(734.766);
  const s = recorder.snapshot();
  t.equal(s.maxMs, 734.766);
  t.ok(s.p50Ms <= s.maxMs && s.p99Ms <= s.maxMs && s.p999Ms <= s.maxMs, JSON.stringify(s));
  t.ok(s.p50Ms > 734, "and stay within the histogram's precision of the value");
  t.end();
});
