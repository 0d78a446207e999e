import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { replaceFile, replaceFileWith } from "../../../src/runtime/disk/file_ops.ts";
import { CrashingDisk, SimulatedCrash } from "../../helpers/disks/crashing_disk.ts";
import { RecordingDisk } from "../../helpers/disks/recording_disk.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

t.test("a replacement goes temp, fsync, rename, directory fsync, in that order", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "record"), "old contents, longer than the new");
  const disk = new RecordingDisk();
  await replaceFile(disk, join(dir, "record"), bytes("new"));
  t.same(disk.ops, [
    "open+create record.tmp",
    "write record.tmp",
    "fsync record.tmp",
    "rename record.tmp record",
    "fsync dir",
  ]);
  t.equal(
    readFileSync(join(dir, "record"), "utf8"),
    "new",
    "the whole file replaced, nothing of the old left",
  );
  t.same(readdirSync(dir), ["record"], "no temporary file left");
});

t.test("a crash at any durable step leaves the old file or the new one, whole", async (t) => {
  // The durable steps: the temp file's fsync, the rename, the directory fsync.
  for (let crashAt = 1; crashAt <= 3; crashAt++) {
    const dir = tempDir(t);
    writeFileSync(join(dir, "record"), "old");
    await t.rejects(
      replaceFile(new CrashingDisk(crashAt), join(dir, "record"), bytes("new")),
      SimulatedCrash,
    );
    const left = readFileSync(join(dir, "record"), "utf8");
    t.ok(left === "old" || left === "new", `crash at step ${crashAt}: ${left}`);
    if (crashAt < 2) t.equal(left, "old", "before the rename the old file stands");
  }
});

t.test("replaceFileWith: a chosen temp path, the directory made, the file trimmed, write's result returned", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "a", "b", "chunk");
  const written = await replaceFileWith(
    new NodeDisk(),
    path,
    async (file) => {
      await file.writeAt(bytes("0123456789"), 0);
      return 4;
    },
    { tempPath: `${path}.part`, makeDirectory: true, trimTo: (n) => n },
  );
  t.equal(written, 4);
  t.equal(readFileSync(path, "utf8"), "0123", "cut to the length trimTo gives");
  t.notOk(existsSync(`${path}.part`));
});

t.test("a failed write leaves the old file in place and the error to the caller", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "record"), "old");
  const failure = new Error("Cannot produce the contents: the source failed");
  await t.rejects(
    replaceFileWith(new NodeDisk(), join(dir, "record"), () => Promise.reject(failure)),
    failure,
  );
  t.equal(readFileSync(join(dir, "record"), "utf8"), "old");
});
