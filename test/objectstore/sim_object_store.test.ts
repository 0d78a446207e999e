import t from "tap";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { objectStoreContract } from "../helpers/object_store_contract.ts";

// The contract on the sim backend with faults off.
const clock = new VirtualClock();
objectStoreContract(t, new SimObjectStore(clock, new Rng(1)), "strata/c1", {
  exactIfAbsent: true,
  wallMs: () => clock.wallMs(),
});
