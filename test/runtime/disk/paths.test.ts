import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import { dirOf } from "../../../src/runtime/disk/file_ops.ts";

t.test("dirOf: everything before the last slash, the root for a file at the root", (t) => {
  const rows: [string, string][] = [
    ["/data/p0/superblock.bin", "/data/p0"],
    ["data/cache/chunk", "data/cache"],
    ["/file", "/"],
    ["/data/p0/", "/data/p0"],
  ];
  for (const [path, dir] of rows) t.equal(dirOf(path), dir, path);
  t.throws(() => dirOf("superblock.bin"), AssertionError, "a bare name has no directory to give");
  t.end();
});
