import t from "tap";
import { ControlEpochMismatchError } from "../../../src/tier/control/control_log.ts";

// control_log.ts holds the ControlLog interface, which has no behaviour of its own (its only
// implementation, LocalControlLog, is tested in local_control_log.test.ts, a refused submission
// included), and the error a failed epoch precondition is: that error is tested here.

t.test("a failed epoch precondition is a typed error that says which epochs met", (t) => {
  const error = new ControlEpochMismatchError(3, 4);
  t.ok(error instanceof Error);
  t.equal(error.name, "ControlEpochMismatchError");
  t.same([error.expectedEpoch, error.epoch], [3, 4]);
  t.equal(error.message, "Cannot submit a control command: the control log is at epoch 4, not 3");
  t.end();
});
