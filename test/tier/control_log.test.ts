import t from "tap";
import { ControlEpochMismatchError } from "../../src/tier/control_log.ts";

t.test("a failed epoch precondition is a typed error that says which epochs met", (t) => {
  const error = new ControlEpochMismatchError(3, 4);
  t.ok(error instanceof Error);
  t.equal(error.name, "ControlEpochMismatchError");
  t.same([error.expectedEpoch, error.epoch], [3, 4]);
  t.equal(error.message, "Cannot submit a control command: the control log is at epoch 4, not 3");
  t.end();
});
