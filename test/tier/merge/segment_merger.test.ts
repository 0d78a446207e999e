import t from "tap";
import type { Test } from "tap";
import { readFile, writeFile } from "node:fs/promises";
import type { Partition } from "../../../src/log/partition/partition.ts";
import type { ReplaceRemoteSegments } from "../../../src/log/segment/segment_replacement.ts";
import { segmentKeys } from "../../../src/tier/bucket/object_keys.ts";
import { mergePartition, type MergerDeps } from "../../../src/tier/merge/segment_merger.ts";
import { ReplacedObjects } from "../../../src/tier/merge/replaced_objects.ts";
import { TierRemoteReader } from "../../../src/tier/cache/tier_remote_reader.ts";
import { RemoteDataLossError } from "../../../src/log/remote/remote_reader.ts";
import { TokenBucket } from "../../../src/runtime/cooperation/token_bucket.ts";
import { silentLogger } from "../../../src/runtime/logger.ts";
import { evicted, payloadOk } from "../../helpers/evicted_partition.ts";
import { CrashingDisk, SimulatedCrash } from "../../helpers/disks/crashing_disk.ts";

// Segments of three 10 kB messages (about 30 kB each), merged into objects of at most 200 kB: a
// segment below 100 kB is small.
const targetBytes = 200_000;

async function fixture(t: Test) {
  const f = await evicted(t, { segmentSizeBytes: 25_000, messages: 30 });
  await f.partition.applyFloor({
    kind: "advance_tiered_floor",
    partition: f.partition.log.label,
    purgeGeneration: 0,
    upToOffset: f.floor,
  });
  const cache = await f.attach();
  const replaces: ReplaceRemoteSegments[] = [];
  const deps: MergerDeps = {
    disk: f.disk,
    store: f.store,
    upload: {
      disk: f.disk,
      store: f.store,
      pieceBytes: 65536,
      bandwidth: new TokenBucket(f.clock, { rateBytesPerSec: "unlimited", waitersMax: 1, name: "b" }),
    },
    logger: silentLogger(),
    clock: f.clock,
    mergeTimeoutMs: 60_000,
    submitReplace: async (command) => {
      replaces.push(command);
      const decision = await f.partition.replaceRemote(command);
      t.equal(decision.kind, "replace", "the committed replace applies");
    },
  };
  const merge = (requestsLeft = 1000) =>
    mergePartition(deps, f.partition, f.incarnation, { targetBytes, indexIntervalBytes: 4096, requestsLeft });
  return { ...f, deps, replaces, merge, cache };
}

/**
 * The log as a consumer reads it: every message (offset, timestamp, key, headers, payload), and
 * the bytes of every batch, copied out of the read windows.
 */
async function readAll(partition: Partition) {
  const read = await partition.log.read(0, 1000, 10_000_000);
  const messages = read.messages.map((m) => ({
    offset: m.offset,
    timestampMs: m.timestampMs,
    key: m.key?.slice() ?? null,
    headers: m.headers,
    payload: m.payload?.slice() ?? null,
  }));
  read.release();
  const batches: Uint8Array[] = [];
  // Each pass reads at least one batch: bounded by the log's offsets.
  for (let offset = 0; offset < partition.log.nextOffset;) {
    const got = await partition.log.readBatches(offset, 100_000);
    batches.push(...got.batches.map((b) => b.slice()));
    got.release();
    offset = got.nextOffset;
  }
  return { messages, batches };
}

t.test("small remote segments become one object, read back the same before, during, after and after a reboot", async (t) => {
  const f = await fixture(t);
  const before = await readAll(f.partition);
  t.equal(before.messages.length, 30);
  t.ok(before.messages.every(payloadOk));
  t.equal(before.batches.length, 30);
  const remoteBefore = f.partition.log.segments.filter((s) => s.location === "remote");
  t.ok(remoteBefore.length >= 8, `${remoteBefore.length} small remote segments`);
  const first = await f.merge();
  t.equal(first.kind, "merged");
  const merged = f.partition.log.segments[0]!;
  t.not(merged.mergedEndOffset, null, "the chain's first segment is a merged one");
  t.ok(merged.sizeBytes <= targetBytes && merged.sizeBytes >= targetBytes / 2, `${merged.sizeBytes} bytes`);
  const keys = segmentKeys(f.incarnation, merged.startOffset, merged.endOffset);
  t.ok(f.sim.keys().includes(keys.log) && f.sim.keys().includes(keys.index), "both objects are stored");
  const covered = remoteBefore.filter((s) => s.endOffset <= merged.endOffset);
  t.ok(covered.length >= 2, `${covered.length} segments replaced`);
  const lastProducers = f.sim.peek(segmentKeys(f.incarnation, covered.at(-1)!.startOffset, null).producers);
  t.ok(lastProducers !== undefined, "the last replaced segment went up with its producer snapshot");
  t.same(
    f.sim.peek(keys.producers)?.bytes,
    lastProducers?.bytes,
    "the merged segment's producer snapshot is its last segment's: the state where both end",
  );
  t.ok(
    covered.every((s) => f.sim.keys().includes(segmentKeys(f.incarnation, s.startOffset, null).log)),
    "the replaced objects stay in the store (a reader in flight may hold them)",
  );
  t.same(await readAll(f.partition), before, "read back byte for byte after the merge");
  // The rest merges too, read meanwhile: the first read starts as the merge does, so it straddles it.
  let merging = true;
  const second = f.merge().finally(() => (merging = false));
  const during: Awaited<ReturnType<typeof readAll>>[] = [];
  for (let reads = 0; reads < 20 && merging; reads++) during.push(await readAll(f.partition));
  t.equal((await second).kind, "merged");
  t.ok(during.length >= 1, `${during.length} reads during the merge`);
  t.ok(during.every((read) => t.same(read, before)), "read back byte for byte during the merge");
  t.same(await f.merge(), { kind: "none" });
  const remoteAfter = f.partition.log.segments.filter((s) => s.location === "remote");
  t.equal(remoteAfter.length, 2, "two merged segments hold what ten held");
  t.same(await readAll(f.partition), before);
  await f.partition.close();
  const reopened = await f.reopen();
  t.teardown(() => reopened.close());
  t.same(
    reopened.log.segments.filter((s) => s.location === "remote").map((
      s,
    ) => [s.startOffset, s.mergedEndOffset]),
    remoteAfter.map((s) => [s.startOffset, s.endOffset]),
    "a reboot finds the merged chain",
  );
  const names = await f.disk.list(f.partition.dir);
  t.same(names.filter((n) => n.endsWith(".tmp")), [], "no staging file is left");
  t.same(
    names.filter((n) => n.endsWith(".index") && !n.includes("-")).filter((n) =>
      covered.some((s) => n.startsWith(s.stem))
    ),
    [],
    "the replaced segments' indexes are gone",
  );
  await f.attach(reopened);
  t.same(await readAll(reopened), before, "read back byte for byte after a reboot");
});

t.test("an object that is not what its marker says is an anomaly: nothing is replaced", async (t) => {
  const f = await fixture(t);
  const victim = f.partition.log.segments[1]!;
  f.sim.corrupt(segmentKeys(f.incarnation, victim.startOffset, null).log, 100);
  const chainBefore = f.partition.log.segments.map((s) => s.startOffset);
  const outcome = await f.merge();
  t.equal(outcome.kind, "anomaly");
  t.match(outcome.kind === "anomaly" ? outcome.detail : "", /its marker says/);
  t.same(f.partition.log.segments.map((s) => s.startOffset), chainBefore, "the chain is as it was");
  t.same(f.replaces, [], "no replace was submitted");
});

t.test("a merge needs one GET per segment and eight more requests: too few left, none starts", async (t) => {
  const f = await fixture(t);
  t.same(await f.merge(9), { kind: "none" }, "9 requests leave room for one segment, not two");
  const outcome = await f.merge(10);
  t.equal(outcome.kind === "merged" ? outcome.segments : 0, 2, "10 requests merge two segments");
});

t.test("a replace applied again (a replay) changes nothing; one the chain no longer holds is rejected, one past the floor waits", async (t) => {
  const f = await fixture(t);
  t.equal((await f.merge()).kind, "merged");
  const command = f.replaces[0]!;
  const chain = f.partition.log.segments.map((s) => s.startOffset);
  t.same(await f.partition.replaceRemote(command), { kind: "already" });
  t.same(f.partition.log.segments.map((s) => s.startOffset), chain);
  const stale = { ...command, purgeGeneration: 1 };
  t.equal((await f.partition.replaceRemote(stale)).kind, "rejected", "another generation is rejected");
  const m = command.markers[0]!;
  const reaching = { ...command, markers: [{ ...m, endOffset: f.floor, startOffset: m.startOffset }] };
  t.equal(
    (await f.partition.replaceRemote(reaching)).kind,
    "wait",
    "a replace up to the floor waits for the floor (a follower behind its leader)",
  );
});

t.test("a crash at each durable step of a replace leaves the old chain or the new, both readable", async (t) => {
  const f = await fixture(t);
  const before = await readAll(f.partition);
  const oldChain = f.partition.log.segments.map((s) => [s.startOffset, s.endOffset]);
  t.equal((await f.merge()).kind, "merged");
  const merged = f.partition.log.segments[0]!;
  const replaced = oldChain.filter(([start]) => start! <= merged.endOffset).map(([start]) => start!);
  await f.partition.close();
  const table = `${f.partition.dir}/remote.table`;
  const tableBytes = await readFile(table);
  // Between the table's fsync and the unlinks: the replaced segments' indexes are still there.
  for (const start of replaced) {
    await writeFile(`${f.partition.dir}/${String(start).padStart(20, "0")}.index`, new Uint8Array(16));
  }
  const afterAppend = await f.reopen();
  t.same(afterAppend.log.segments[0]!.mergedEndOffset, merged.endOffset, "the merged chain");
  const names = await f.disk.list(f.partition.dir);
  t.same(
    replaced.filter((start) => names.includes(`${String(start).padStart(20, "0")}.index`)),
    [],
    "boot removes the replaced segments' indexes",
  );
  await f.attach(afterAppend);
  t.same(await readAll(afterAppend), before);
  await afterAppend.close();
  // The append torn by the crash: its record is the table's torn tail, cut at boot.
  await writeFile(table, tableBytes.subarray(0, tableBytes.length - 1));
  const torn = await f.reopen();
  t.teardown(() => torn.close());
  t.same(torn.log.segments.map((s) => [s.startOffset, s.endOffset]), oldChain, "the old chain");
  await f.attach(torn);
  t.same(await readAll(torn), before, "read from the replaced objects, still in the store");
});

t.test("a crash at every durable step of merges leaves a gapless chain that reads back the same", async (t) => {
  const f = await fixture(t);
  const before = await readAll(f.partition);
  await f.partition.close();
  const chains = new Set<string>();
  let crashes = 0;
  let unreadable = 0;
  // Each round crashes one durable step later, until a round merges nothing and does not crash.
  for (let crashAt = 1; crashAt <= 200; crashAt++) {
    const disk = new CrashingDisk(crashAt);
    let outcome: string;
    try {
      const p = await f.reopen(disk);
      await f.attach(p);
      const deps = {
        ...f.deps,
        disk,
        submitReplace: async (c: ReplaceRemoteSegments) => void await p.replaceRemote(c),
      };
      const merged = await mergePartition(deps, p, f.incarnation, {
        targetBytes,
        indexIntervalBytes: 4096,
        requestsLeft: 1000,
      });
      outcome = merged.kind;
      await p.close();
    } catch (error) {
      if (!(error instanceof SimulatedCrash)) throw error;
      outcome = "crash";
    }
    if (outcome === "crash") crashes++;
    const after = await f.reopen();
    const segments = after.log.segments;
    t.ok(
      segments.every((s, i) => i === 0 || s.startOffset === segments[i - 1]!.endOffset + 1),
      `gapless after round ${crashAt}`,
    );
    chains.add(segments.map((s) => `${s.startOffset}-${s.endOffset}`).join(","));
    await f.attach(after);
    const read = await readAll(after);
    if (
      JSON.stringify(read.messages.map((m) => m.offset)) !==
        JSON.stringify(before.messages.map((m) => m.offset)) ||
      !read.batches.every((b, i) => Buffer.compare(b, before.batches[i]!) === 0)
    ) unreadable++;
    await after.close();
    if (outcome === "none") break;
  }
  t.equal(unreadable, 0, "every round's chain reads back the same batches, byte for byte");
  // A merge's durable steps: the staged log's fsync, the staged index's, the table's, the unlinks'.
  t.ok(crashes >= 4, `${crashes} rounds crashed, each one durable step later`);
  t.equal(chains.size, 3, "the chain was the old one, with the first run merged, or with both");
  t.equal([...chains].at(-1)!.split(",").length, 3, "in the end two merged segments and the active one");
});

t.test("the objects a merge replaced are deleted a grace after a look first found them, and nothing else", async (t) => {
  const f = await fixture(t);
  const before = await readAll(f.partition);
  t.equal((await f.merge()).kind, "merged");
  const merged = f.partition.log.segments[0]!;
  const keysBefore = f.sim.keys();
  const replacedKeys = keysBefore.filter((k) => {
    const stem = /\/(\d{20})(-\d{20})?\.(log|index|producers)$/.exec(k);
    return stem !== null && stem[2] === undefined && Number(stem[1]) <= merged.endOffset;
  });
  t.ok(replacedKeys.length >= 4, `${replacedKeys.length} keys replaced`);
  const deleted: number[] = [];
  const deps = {
    store: f.store,
    clock: f.clock,
    logger: silentLogger(),
    deleteGraceMs: 60_000,
    deleted: (n: number) => deleted.push(n),
  };
  const budget = (left: number) => ({
    left,
    take(n = 1) {
      this.left -= n;
    },
  });
  const replaced = new ReplacedObjects();
  await replaced.sweep(deps, f.partition, f.incarnation, budget(100));
  t.equal(replaced.pending, replacedKeys.length, "the first look notes them");
  t.same(f.sim.keys(), keysBefore, "and deletes nothing");
  f.clock.advance(59_000);
  await replaced.sweep(deps, f.partition, f.incarnation, budget(100));
  t.same(f.sim.keys(), keysBefore, "nothing within the grace");
  f.clock.advance(1000);
  const tight = budget(2);
  await replaced.sweep(deps, f.partition, f.incarnation, tight);
  t.same(f.sim.keys(), keysBefore, "without room for a listing and the deletion, nothing is done");
  await replaced.sweep(deps, f.partition, f.incarnation, budget(100));
  t.same(
    f.sim.keys().sort(),
    keysBefore.filter((k) => !replacedKeys.includes(k)).sort(),
    "after the grace exactly the replaced keys are gone",
  );
  t.same(deleted, [replacedKeys.length]);
  t.equal(replaced.pending, 0);
  const lists = f.sim.count("list");
  await replaced.sweep(deps, f.partition, f.incarnation, budget(100));
  await replaced.sweep(deps, f.partition, f.incarnation, budget(100));
  t.equal(f.sim.count("list"), lists + 1, "a range found clear once is not listed again");
  t.same(await readAll(f.partition), before, "the log reads back the same");
});

t.test("in a cluster the replaced objects wait for every replica to take the replace, which then goes", async (t) => {
  const f = await fixture(t);
  t.equal((await f.merge()).kind, "merged");
  const merged = f.partition.log.segments[0]!;
  const keysBefore = f.sim.keys();
  let takenByAll = false;
  const asked: number[] = [];
  const settled: number[] = [];
  const settledBelow: number[] = [];
  const takers = {
    takenByAll: (_label: string, start: number) => {
      asked.push(start);
      return Promise.resolve(takenByAll);
    },
    settle: (_label: string, start: number) => {
      settled.push(start);
      return Promise.resolve();
    },
    settleBelow: (_label: string, firstOffset: number) => {
      settledBelow.push(firstOffset);
      return Promise.resolve(0);
    },
  };
  const deps = {
    store: f.store,
    clock: f.clock,
    logger: silentLogger(),
    deleteGraceMs: 0,
    deleted: () => {},
    takers,
  };
  const budget = () => ({
    left: 100,
    take(n = 1) {
      this.left -= n;
    },
  });
  const replaced = new ReplacedObjects();
  const lists = f.sim.count("list");
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  t.same(asked, [merged.startOffset, merged.startOffset], "each look asks whether every replica took it");
  t.equal(f.sim.count("list"), lists, "until they all did, the range is not even listed");
  t.same(f.sim.keys(), keysBefore, "and nothing is deleted");
  t.same(
    settledBelow,
    [f.partition.log.firstOffset],
    "retention's passed replaces are removed once per first offset",
  );
  takenByAll = true;
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  t.ok(f.sim.keys().length < keysBefore.length, "once they all did, the replaced objects go (a grace of 0)");
  t.same(settled, [], "the replace stays while its range still held replaced objects");
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  t.same(settled, [merged.startOffset], "a range found clear removes its replace");
});

t.test("a read holding a replaced segment reads its object until the grace has passed", async (t) => {
  const f = await fixture(t);
  const before = await readAll(f.partition);
  // What a read in flight holds: the chain's segments as it resolved them, before the merge.
  const held = f.partition.log.segments.filter((s) => s.location === "remote");
  t.equal((await f.merge()).kind, "merged");
  const merged = f.partition.log.segments[0]!;
  const replacedHeld = held.filter((s) => s.endOffset <= merged.endOffset);
  t.ok(replacedHeld.length >= 2, `${replacedHeld.length} held segments replaced`);
  const deps = {
    store: f.store,
    clock: f.clock,
    logger: silentLogger(),
    deleteGraceMs: 60_000,
    deleted: () => {},
  };
  const budget = () => ({
    left: 100,
    take(n = 1) {
      this.left -= n;
    },
  });
  const replaced = new ReplacedObjects();
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  f.clock.advance(59_000);
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  // A reader of its own, whose chunk cache has nothing of the replaced segments the fixture read.
  const cache = await f.attach();
  const reader = new TierRemoteReader(f.partition, cache, f.readerOptions(cache));
  const gets = f.sim.count("get");
  const within = await reader.chunkAt(replacedHeld[1]!, 0, 4096);
  t.ok(f.sim.count("get") > gets, "the read fetches the replaced segment's object");
  const baseOffset = new DataView(within.bytes.buffer, within.bytes.byteOffset).getBigInt64(0);
  t.equal(
    Number(baseOffset),
    replacedHeld[1]!.startOffset,
    "within the grace the held segment reads its object",
  );
  await reader.drop(within);
  f.clock.advance(1000);
  await replaced.sweep(deps, f.partition, f.incarnation, budget());
  const after = await reader.chunkAt(replacedHeld[0]!, 0, 4096).catch((e) => e);
  t.ok(
    after instanceof RemoteDataLossError,
    `after the grace the replaced objects are gone: ${String(after)}`,
  );
  t.same(await readAll(f.partition), before, "the merged chain reads back the same");
});
