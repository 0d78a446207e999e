import t from "tap";
import { Rng } from "../../src/runtime/rng.ts";

t.test("one seed gives one sequence; another seed gives another", (t) => {
  const a = new Rng(42);
  const b = new Rng(42);
  const c = new Rng(43);
  const seqA = Array.from({ length: 8 }, () => a.nextU32());
  const seqB = Array.from({ length: 8 }, () => b.nextU32());
  const seqC = Array.from({ length: 8 }, () => c.nextU32());
  t.same(seqA, seqB);
  t.not(JSON.stringify(seqA), JSON.stringify(seqC));
  t.ok(seqA.every((x) => Number.isInteger(x) && x >= 0 && x < 2 ** 32));
  t.end();
});

t.test("seed zero is well mixed, int stays in bounds and covers them", (t) => {
  const rng = new Rng(0);
  const draws = Array.from({ length: 2000 }, () => rng.int(3, 7));
  t.same(draws.filter((x) => x < 3 || x > 7), [], "every draw is in bounds");
  t.same([...new Set(draws)].sort(), [3, 4, 5, 6, 7], "every value in range appears");
  let heads = 0;
  for (let i = 0; i < 10_000; i++) if (rng.chance(0.5)) heads++;
  t.ok(heads > 4700 && heads < 5300, `chance(0.5) is fair: ${heads} of 10000`);
  t.end();
});

t.test("fromEntropy seeds from the platform", (t) => {
  const a = Rng.fromEntropy().nextU32();
  const b = Rng.fromEntropy().nextU32();
  const c = Rng.fromEntropy().nextU32();
  t.ok(!(a === b && b === c), "three entropy-seeded generators do not agree");
  t.throws(() => new Rng(1.5), /integer/);
  t.end();
});
