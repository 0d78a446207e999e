import t from "tap";
import {
  backoffMs,
  decideRetry,
  defaultRetryProfiles,
  jittered,
} from "../../src/objectstore/retry_policy.ts";

const p = defaultRetryProfiles;

t.test("transient errors retry at once, then back off from 10 ms by ×2 to 5 s", (t) => {
  const delays = [1, 2, 3, 4, 5, 12, 20].map((n) => decideRetry("retry", false, n, 0, Infinity, p, 0.999999));
  t.same(delays.map((d) => d.retry && Math.round(d.delayMs)), [0, 10, 20, 40, 80, 5000, 5000]);
  t.end();
});

t.test("non-transient errors back off from 1 s to 30 s", (t) => {
  const delays = [1, 2, 3, 5, 6, 10].map((n) => decideRetry("fail", false, n, 0, Infinity, p, 0.999999));
  t.same(delays.map((d) => d.retry && Math.round(d.delayMs)), [1000, 2000, 4000, 16000, 30000, 30000]);
  t.end();
});

t.test("equal jitter draws uniformly from [delay/2, delay]", (t) => {
  t.equal(jittered(1000, 0), 500);
  t.equal(jittered(1000, 0.5), 750);
  t.equal(backoffMs(3, p.transient), 40);
  const low = decideRetry("fail", false, 1, 0, Infinity, p, 0);
  t.same(low, { retry: true, delayMs: 500 });
  t.end();
});

t.test("answers are not retried: not found, auth, unsupported, a failed precondition", (t) => {
  for (const cls of ["not_found", "not_modified", "auth", "unsupported"] as const) {
    t.equal(decideRetry(cls, false, 1, 0, Infinity, p, 0.5).retry, false, cls);
  }
  t.equal(decideRetry("fail", true, 1, 0, Infinity, p, 0.5).retry, false, "precondition failed");
  t.end();
});

t.test("no retry that would start at or after the deadline", (t) => {
  t.same(decideRetry("fail", false, 1, 9_001, 10_000, p, 0.999999), {
    retry: false,
    reason: "the deadline leaves no time for another attempt",
  });
  t.equal(decideRetry("retry", false, 1, 9_999, 10_000, p, 0.5).retry, true, "an immediate retry fits");
  t.end();
});
