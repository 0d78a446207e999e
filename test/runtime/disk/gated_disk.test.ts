import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import t from "tap";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { GatedDisk } from "../../../src/runtime/disk/around_disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { PieceGate } from "../../../src/runtime/cooperation/piece_gate.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

/**
 * Runs `readers` tasks that each read a file 5 times and then spend 2 ms of CPU on what they read,
 * beside a timer re-armed at every firing; returns how often two of those stretches ran with no
 * timer firing between them (in one turn of the loop).
 */
async function stretchesInOneTurn(disk: GatedDisk | NodeDisk, dir: string, readers: number): Promise<number> {
  const events: string[] = [];
  let running = true;
  const ticker = (async () => {
    while (running) {
      await sleep(0);
      events.push("tick");
    }
  })();
  const file = await disk.open(join(dir, "data"), { create: true });
  await file.writeAt(new Uint8Array(4096).fill(7), 0);
  await Promise.all(Array.from({ length: readers }, async (_, r) => {
    const buffer = new Uint8Array(4096);
    for (let i = 0; i < 5; i++) {
      await file.readAt(buffer, 0);
      const started = performance.now();
      while (performance.now() - started < 2) { /* the caller's work on what it read */ }
      events.push(`r${r}`);
    }
  }));
  await file.close();
  running = false;
  await ticker;
  let consecutive = 0;
  for (let i = 1; i < events.length; i++) if (events[i] !== "tick" && events[i - 1] !== "tick") consecutive++;
  return consecutive;
}

t.test("callers of disk operations that complete together resume in turns of their own: a timer runs between any two", async (t) => {
  const dir = tempDir(t);
  const consecutive = await stretchesInOneTurn(new GatedDisk(new NodeDisk(), new PieceGate()), dir, 6);
  t.equal(consecutive, 0, "no two callers' stretches in one turn");
});

t.test("without the gate, callers resumed together run back to back in one turn (what the gate prevents)", async (t) => {
  const dir = tempDir(t);
  const consecutive = await stretchesInOneTurn(new NodeDisk(), dir, 6);
  t.ok(consecutive > 0, `${consecutive} pairs of stretches shared a turn`);
});

t.test("results and failures pass through unchanged, and the gate is free again afterwards", async (t) => {
  const dir = tempDir(t);
  const gate = new PieceGate();
  const disk = new GatedDisk(new NodeDisk(), gate);
  await disk.mkdirp(join(dir, "a/b"));
  const file = await disk.createExclusive(join(dir, "a/b/f"));
  await file.append(new Uint8Array([1, 2, 3]));
  await file.writeAt(new Uint8Array([9]), 1);
  await file.sync();
  t.equal(await file.sizeBytes(), 3, "size");
  const buffer = new Uint8Array(3);
  t.equal(await file.readAt(buffer, 0), 3, "bytes read");
  t.same([...buffer], [1, 9, 3], "contents");
  await file.truncate(1);
  await file.close();
  t.same(await disk.list(join(dir, "a/b")), ["f"], "list");
  t.equal((await disk.stat(join(dir, "a/b/f")))?.sizeBytes, 1, "stat");
  await disk.link(join(dir, "a/b/f"), join(dir, "a/b/g"));
  await disk.rename(join(dir, "a/b/g"), join(dir, "a/b/h"));
  await disk.fsyncDir(join(dir, "a/b"));
  await disk.unlink(join(dir, "a/b/h"));
  t.ok(await disk.capacityBytes(dir) > 0, "capacity");
  const missing = await disk.open(join(dir, "nope")).catch((e) => e);
  t.ok(missing instanceof DiskError && missing.code === "not_found", "a failure keeps its type and code");
  const taken = await disk.createExclusive(join(dir, "a/b/f")).catch((e) => e);
  t.ok(taken instanceof DiskError && taken.code === "exists", "exists");
  await disk.removeTree(join(dir, "a"));
  t.equal(await disk.stat(join(dir, "a")), null, "tree removed");
  t.equal(gate.waiting, 0, "nobody left waiting for a turn once every operation has answered");
});
