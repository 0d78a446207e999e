import t from "tap";
import { createMetricsRegistry } from "../../../src/runtime/metrics/metrics.ts";
import { QuotaSpentError, RequestBudget } from "../../../src/tier/housekeeping/housekeeping_budget.ts";
import { HousekeepingMetrics } from "../../../src/tier/housekeeping/housekeeping_metrics.ts";
import { metric } from "../../helpers/housekeeping_fixture.ts";

t.test("a run's budget is spent request by request and counted in the metrics", async (t) => {
  const registry = createMetricsRegistry();
  const budget = new RequestBudget(5, new HousekeepingMetrics(registry));
  t.equal(budget.left, 5);
  budget.take();
  budget.take(3);
  t.equal(budget.left, 1);
  t.equal(await metric(registry, /strata_housekeeping_requests_total (\d+)/), 4);
  t.throws(() => budget.take(2), QuotaSpentError, "more than is left is refused");
  t.equal(budget.left, 1, "and nothing is spent by the refusal");
  t.equal(await metric(registry, /strata_housekeeping_requests_total (\d+)/), 4);
  budget.take();
  t.equal(budget.left, 0);
});

t.test("exhaust ends the run: nothing is left to spend", (t) => {
  const budget = new RequestBudget(100, undefined);
  budget.exhaust();
  t.equal(budget.left, 0);
  t.throws(() => budget.take(), /Cannot spend a request: the housekeeping run's request_quota is spent/);
  t.end();
});
