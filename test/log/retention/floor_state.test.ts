import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import { applyAdvanceTieredFloor, resetForPurge } from "../../../src/log/retention/floor_state.ts";

const cmd = (upToOffset: number, purgeGeneration = 0) => ({
  kind: "advance_tiered_floor" as const,
  partition: "p",
  purgeGeneration,
  upToOffset,
});

t.test("apply is max(current, up_to): the floor never moves back", (t) => {
  let state = { purgeGeneration: 0, tieredUpToOffset: 0 };
  const outcomes: string[] = [];
  for (const up of [100, 50, 100, 250]) {
    const r = applyAdvanceTieredFloor(state, cmd(up), 1000);
    state = r.state;
    outcomes.push(`${r.outcome}:${state.tieredUpToOffset}`);
  }
  t.same(outcomes, ["advanced:100", "unchanged:100", "unchanged:100", "advanced:250"]);
  t.end();
});

t.test("a command from another purge generation is rejected; purge resets to 0 with the next generation", (t) => {
  const state = { purgeGeneration: 3, tieredUpToOffset: 500 };
  t.equal(applyAdvanceTieredFloor(state, cmd(900, 2), 1000).outcome, "rejected_generation");
  const reset = resetForPurge(state);
  t.same(reset, { purgeGeneration: 4, tieredUpToOffset: 0 });
  t.equal(
    applyAdvanceTieredFloor(reset, cmd(900, 3), 1000).outcome,
    "rejected_generation",
    "the old generation's late command",
  );
  t.end();
});

t.test("a floor beyond the partition's committed end is rejected", (t) => {
  const r = applyAdvanceTieredFloor({ purgeGeneration: 0, tieredUpToOffset: 0 }, cmd(1001), 1000);
  t.equal(r.outcome, "rejected_beyond_end");
  t.equal(r.state.tieredUpToOffset, 0);
  t.end();
});

t.test("a negative floor, a fractional offset or a negative committed end is refused", (t) => {
  const state = { purgeGeneration: 0, tieredUpToOffset: 0 };
  t.throws(
    () => applyAdvanceTieredFloor({ purgeGeneration: 0, tieredUpToOffset: -1 }, cmd(10), 1000),
    AssertionError,
  );
  t.throws(() => applyAdvanceTieredFloor(state, cmd(10.5), 1000), AssertionError);
  t.throws(() => applyAdvanceTieredFloor(state, cmd(10), -1), AssertionError);
  t.throws(() => resetForPurge({ purgeGeneration: -1, tieredUpToOffset: 0 }), AssertionError);
  t.end();
});
