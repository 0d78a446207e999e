import t from "tap";
import { LruKeys } from "../../../src/runtime/disk/open_files.ts";

t.test("the oldest key is the least recently touched; a touch makes a key the newest", (t) => {
  const lru = new LruKeys<string>();
  t.equal(lru.oldest(), undefined, "none when empty");
  for (const key of ["a", "b", "c"]) lru.touch(key);
  t.equal(lru.oldest(), "a");
  lru.touch("a");
  t.equal(lru.oldest(), "b", "a touched again is the newest");
  t.equal(lru.size, 3, "a touch of a known key adds nothing");
  t.ok(lru.delete("b"));
  t.notOk(lru.delete("b"), "a second delete finds nothing");
  t.equal(lru.oldest(), "c");
  t.notOk(lru.has("b"));
  t.ok(lru.has("a"));
  t.end();
});
