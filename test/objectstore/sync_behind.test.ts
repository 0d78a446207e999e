import t from "tap";
import type { DiskFile } from "../../src/runtime/disk/disk.ts";
import { SyncBehind } from "../../src/objectstore/fs_object_store.ts";

/** A file whose fsyncs end when the test says, each recorded. */
class HeldSyncFile {
  readonly path = "/held";
  readonly syncs: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  running = 0;
  runningMax = 0;

  sync(): Promise<void> {
    this.running++;
    this.runningMax = Math.max(this.runningMax, this.running);
    return new Promise<void>((resolve, reject) => {
      const end = () => this.running--;
      this.syncs.push({ resolve: () => (end(), resolve()), reject: (e) => (end(), reject(e)) });
    });
  }

  asDiskFile(): DiskFile {
    return this as unknown as DiskFile;
  }
}

/** Lets every queued promise reaction run. */
async function drain(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

t.test("next starts an fsync without waiting for it; the next one waits: one in flight", async (t) => {
  const file = new HeldSyncFile();
  const behind = new SyncBehind(file.asDiskFile());
  await behind.next();
  t.equal(file.syncs.length, 1, "the first fsync started");
  t.equal(file.running, 1, "and next returned while it runs");
  let secondReturned = false;
  const second = behind.next().then(() => (secondReturned = true));
  await drain();
  t.equal(secondReturned, false, "the second next waits for the first fsync");
  t.equal(file.syncs.length, 1, "and has not started another");
  file.syncs[0]!.resolve();
  await second;
  t.equal(file.syncs.length, 2, "once it ended, the second fsync started");
  let finished = false;
  const finish = behind.finish().then(() => (finished = true));
  await drain();
  t.equal(finished, false, "finish waits for the last fsync");
  file.syncs[1]!.resolve();
  await finish;
  t.equal(file.runningMax, 1, "never two fsyncs at once");
});

t.test("a failed fsync fails the next call, not the process, and only once", async (t) => {
  const file = new HeldSyncFile();
  const behind = new SyncBehind(file.asDiskFile());
  await behind.next();
  // Rejected while nobody waits on it: an unhandled rejection here would end the test process.
  file.syncs[0]!.reject(new Error("Cannot fsync /held: io"));
  await drain();
  await t.rejects(behind.next(), /Cannot fsync \/held: io/, "the next call throws the fsync's error");
  t.equal(file.syncs.length, 1, "and starts no fsync after a failed one");
  await t.resolves(behind.finish(), "finish does not throw it again: the error is reported once");
});

t.test("finish throws a failed last fsync; a rejection without an error still fails", async (t) => {
  const file = new HeldSyncFile();
  const behind = new SyncBehind(file.asDiskFile());
  await behind.next();
  file.syncs[0]!.reject(undefined);
  await t.rejects(behind.finish(), /Cannot fsync \/held: it failed without an error/);
});

t.test("settled waits for a running fsync and never throws", async (t) => {
  const file = new HeldSyncFile();
  const behind = new SyncBehind(file.asDiskFile());
  await behind.next();
  let settled = false;
  const done = behind.settled().then(() => (settled = true));
  await drain();
  t.equal(settled, false, "it waits while the fsync runs");
  file.syncs[0]!.reject(new Error("Cannot fsync /held: io"));
  await done;
  t.equal(file.running, 0, "it returned once the fsync had ended, failed as it was");
});
