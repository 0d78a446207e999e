import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { unlinkIfPresent } from "../../../src/runtime/disk/file_ops.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

t.test("unlinkIfPresent removes a file, and a missing one is not an error", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "index"), "x");
  const disk = new NodeDisk();
  await unlinkIfPresent(disk, join(dir, "index"));
  t.notOk(existsSync(join(dir, "index")));
  await t.resolves(unlinkIfPresent(disk, join(dir, "index")), "the file already gone");
});

t.test("any other failure reaches the caller", async (t) => {
  const dir = tempDir(t);
  // A directory cannot be unlinked as a file: the error is not "not found".
  await t.rejects(unlinkIfPresent(new NodeDisk(), dir), DiskError);
});
