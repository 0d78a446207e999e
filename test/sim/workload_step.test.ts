import t from "tap";
import { Rng } from "../../src/runtime/rng.ts";
import { scenarios } from "../../src/sim/scenarios.ts";
import { drawStep, type WorkloadView } from "../../src/sim/workload_step.ts";

/** An Rng that returns the floats it is given, in order, and fails when asked for one more. */
class ScriptedRng extends Rng {
  readonly #floats: number[];

  constructor(floats: number[]) {
    super(0);
    this.#floats = [...floats];
  }

  override nextFloat(): number {
    const next = this.#floats.shift();
    if (next === undefined) throw new Error("drew more than the script holds");
    return next;
  }

  get left(): number {
    return this.#floats.length;
  }
}

const quiet = { ...scenarios["store_outage"]!, crashChance: 0 };

function view(over: Partial<WorkloadView> = {}): WorkloadView {
  return {
    active: true,
    scenario: quiet,
    logRange: () => ({ firstOffset: 10, nextOffset: 20 }),
    undamagedRemoteSegments: () => [{ startOffset: 0, endOffset: 4 }, { startOffset: 5, endOffset: 9 }],
    storedLog: (startOffset) => ({ key: `k/${startOffset}.log`, sizeBytes: 100 }),
    ...over,
  };
}

/** Draws one step from `floats` and checks that it used every one of them, no more. */
function draw(floats: number[], v: WorkloadView) {
  const rng = new ScriptedRng(floats);
  const step = drawStep(rng, v);
  t.equal(rng.left, 0, `${step.kind} drew exactly ${floats.length} floats`);
  return step;
}

t.test("while active, the scenario's events draw first, each one chance, in a fixed order", (t) => {
  const eventful = {
    ...quiet,
    crashChance: 0.5,
    purgeChance: 0.5,
    wipeDataChance: 0.5,
    deleteTopicChance: 0.5,
    sabotageChance: 0.5,
  };
  const v = view({ scenario: eventful });
  t.same(draw([0.9, 0.1], v), { kind: "crash", wipe: false });
  t.same(draw([0.9, 0.9, 0.1], v), { kind: "purge" });
  t.same(draw([0.9, 0.9, 0.9, 0.1], v), { kind: "crash", wipe: true });
  t.same(draw([0.9, 0.9, 0.9, 0.9, 0.1], v), { kind: "delete_topic" });
  t.same(draw([0.9, 0.9, 0.9, 0.9, 0.9, 0.9], v), { kind: "advance" }, "no event: the roll decides");
  t.end();
});

t.test("the roll picks among the workload's own steps", (t) => {
  const v = view();
  /** While active, each of the scenario's five events draws its chance (here 0: none strikes). */
  const noEvents = [0, 0, 0, 0, 0];
  t.same(draw([0.01, ...noEvents, 0.5, 0.99], v), {
    kind: "store_consumer_offset",
    consumer: "consumer-1",
    offset: 20,
  });
  t.same(draw([0.035, ...noEvents, 0.5, 0.99], v), {
    kind: "change_options",
    tiered: true,
    localSizeBytes: null,
  });
  t.same(draw([0.035, ...noEvents, 0.9, 0.2], v), {
    kind: "change_options",
    tiered: false,
    localSizeBytes: 32 * 1024,
  });
  t.same(draw([0.2, ...noEvents, 0.7], v), { kind: "produce", count: 3 });
  t.same(draw([0.4, ...noEvents, 0], v), { kind: "poll", offset: 10 });
  t.same(draw([0.7, ...noEvents], v), { kind: "advance" });
  t.end();
});

t.test("after the active part, no event and no options change is drawn", (t) => {
  const always = {
    ...quiet,
    crashChance: 1,
    purgeChance: 1,
    wipeDataChance: 1,
    deleteTopicChance: 1,
    sabotageChance: 1,
  };
  const v = view({ active: false, scenario: always });
  t.same(draw([0.035, 0.5], v), { kind: "produce", count: 2 }, "the options' slice of the roll produces");
  t.same(draw([0.01, 0.99, 0.5], v), { kind: "store_consumer_offset", consumer: "consumer-2", offset: 15 });
  t.same(draw([0.9], v), { kind: "advance" }, "one float only: the roll");
  t.end();
});

t.test("a sabotage draws its segment and damage only when there is an object to damage", (t) => {
  const sabotaging = { ...quiet, sabotageChance: 1 };
  const before = [0.9, 0.9, 0.9, 0.9, 0.9, 0];
  t.same(draw([...before, 0.6, 0.2], view({ scenario: sabotaging })), {
    kind: "sabotage",
    target: { startOffset: 5, endOffset: 9, key: "k/5.log", damage: { kind: "lose" } },
  });
  t.same(draw([...before, 0.1, 0.7, 0.25], view({ scenario: sabotaging })), {
    kind: "sabotage",
    target: { startOffset: 0, endOffset: 4, key: "k/0.log", damage: { kind: "corrupt", byteIndex: 25 } },
  });
  t.same(
    draw(before, view({ scenario: sabotaging, undamagedRemoteSegments: () => [] })),
    { kind: "sabotage", target: null },
    "no evicted segment: nothing more is drawn",
  );
  t.same(
    draw([...before, 0.1], view({ scenario: sabotaging, storedLog: () => null })),
    { kind: "sabotage", target: null },
    "its object already gone: the damage is not drawn",
  );
  t.end();
});

t.test("one seed draws one sequence of steps", (t) => {
  const kinds = (seed: number) => {
    const rng = new Rng(seed);
    return Array.from({ length: 200 }, () => drawStep(rng, view({ scenario: scenarios["swarm"]! })).kind);
  };
  t.same(kinds(3), kinds(3));
  t.not(kinds(3).join(), kinds(4).join());
  t.end();
});
