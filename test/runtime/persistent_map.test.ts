import t from "tap";
import { PersistentMap } from "../../src/runtime/persistent_map.ts";
import { Rng } from "../../src/runtime/rng.ts";

t.test("a persistent map agrees with a Map over random changes, and no change touches an older map", (t) => {
  const rng = new Rng(7);
  const model = new Map<string, number>();
  let map = PersistentMap.empty<number>();
  const snapshots: [PersistentMap<number>, Map<string, number>][] = [];
  for (let step = 0; step < 5000; step++) {
    const key = `stream/topic/${rng.int(0, 700)}`;
    if (rng.chance(0.3)) {
      map = map.without(key);
      model.delete(key);
    } else {
      map = map.with(key, step);
      model.set(key, step);
    }
    if (step % 500 === 0) snapshots.push([map, new Map(model)]);
  }
  t.equal(map.size, model.size);
  t.same(new Map(map.entries()), model);
  for (const [snapshot, expected] of snapshots) {
    t.same(new Map(snapshot), expected, "an older map is unchanged");
  }
  t.equal(map.get("absent"), undefined);
  t.equal(map.has("absent"), false);
  t.equal(map.without("absent"), map, "removing an absent key returns the same map");
  t.end();
});

t.test("ordered gives keys in the order they first went in, whatever their hash", (t) => {
  const keys = Array.from({ length: 600 }, (_, i) => `p${(i * 7919) % 600}`);
  let map = PersistentMap.empty<number>();
  for (const key of keys) map = map.with(key, 0);
  // Setting a key again keeps its place; removing and adding it again moves it last.
  map = map.with(keys[0]!, 1).without(keys[1]!).with(keys[1]!, 2);
  const expected = [keys[0]!, ...keys.slice(2), keys[1]!];
  t.same(map.ordered([...map.keys()]), expected);
  t.not([...map.keys()].join(), expected.join(), "iteration itself goes by bucket");
  t.ok(map.rankOf(keys[0]!) < map.rankOf(keys[2]!));
  t.throws(() => map.ordered(["absent"]), /not in the map/);
  const seen: string[] = [];
  map.forEach((_value, key) => seen.push(key));
  t.same(seen, [...map.keys()]);
  t.same([...map.values()].length, 600);
  t.end();
});
