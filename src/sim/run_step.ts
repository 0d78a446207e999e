import { unreachable } from "../runtime/assert.ts";
import { crash, inSequence } from "./crash_restart.ts";
import * as inv from "./invariants.ts";
import { buildProcess, createPartition } from "./sim_process.ts";
import { dataPath, partitionKey, payloadBytes } from "./sim_settings.ts";
import { advance, settle, withTime } from "./virtual_time.ts";
import type { SabotageTarget, WorkloadStep } from "./workload_step.ts";
import type { World } from "./world.ts";
import { expectedLoss, isDataLoss, optionsChanged } from "./world_checks.ts";

/**
 * Runs one step of the workload. A step that takes no time (sabotage, a consumer's offset, an
 * options change) returns nothing and runs to its end synchronously, so the loop goes on without
 * yielding and the I/O it started keeps its place in the seeded completion order; the others return
 * the promise of their end.
 */
export function step(w: World, s: WorkloadStep): Promise<void> | undefined {
  switch (s.kind) {
    case "crash":
      return crash(w, s.wipe);
    case "purge":
      return inSequence(w, () => purge(w));
    case "delete_topic":
      return inSequence(w, () => deleteTopic(w));
    case "sabotage":
      sabotage(w, s.target);
      return;
    case "store_consumer_offset":
      storeConsumerOffset(w, s.consumer, s.offset);
      return;
    case "change_options":
      w.options.tiered = s.tiered;
      w.options.localSizeBytes = s.localSizeBytes;
      optionsChanged(w);
      w.record(`options tiered=${s.tiered} local_size=${s.localSizeBytes}`);
      return;
    case "produce":
      return produce(w, s.count);
    case "poll":
      return poll(w, s.offset);
    case "advance":
      return advance(w);
    default:
      unreachable(s, "a workload step");
  }
}

/**
 * A producer appends `count` messages, each payload filled with its offset's low byte. The answer is
 * checked when it comes; one that arrives after its process crashed or its topic went never reached
 * the client.
 */
function produce(w: World, count: number): Promise<void> {
  const base = w.nextAssign;
  w.nextAssign += count;
  const messages = Array.from({ length: count }, (_, i) => ({
    key: null,
    headers: {},
    payload: new Uint8Array(payloadBytes).fill((base + i) & 0xff),
  }));
  const appended = w.process.partition.log.append(messages);
  const from = w.processNo;
  appended.then((r) => {
    if (from !== w.processNo) return;
    if (r.baseOffset !== base) w.fail(`an append expected at ${base} was assigned ${r.baseOffset}`);
    w.acknowledgedBelow = Math.max(w.acknowledgedBelow, r.baseOffset + r.count);
    w.acknowledgedTotal += r.count;
  }, (error) => {
    // Only a crash may fail an append: the process it belonged to is gone.
    if (from === w.processNo) w.fail(`an append failed without a crash: ${error}`);
  });
  w.record(`produce ${base}+${count}`);
  return settle();
}

/** A consumer polls 5 messages from `offset` through the ordinary read path (local or remote). */
async function poll(w: World, offset: number): Promise<void> {
  try {
    const got = await withTime(w, w.process.partition.log.read(offset, 5, 64 * 1024), 10_000);
    if (got === null) {
      w.record(`poll ${offset} -> pending`);
      return;
    }
    const r = got.value;
    w.record(`poll ${offset} -> ${r.messages.length}`);
    w.fail(inv.readBackIntact(r.messages));
  } catch (error) {
    // Transient answers are fine; missing or corrupt data is never, unless the scenario made it so.
    if (isDataLoss(error) && !expectedLoss(w, error)) w.fail(String(error));
    w.record(`poll ${offset} -> ${(error as Error).name}`);
  }
}

/** A consumer stores its offset; its acknowledgement makes it and every earlier store durable. */
function storeConsumerOffset(w: World, name: string, offset: number): void {
  const c = w.consumers.get(name) ?? { acknowledged: null, inFlight: [] };
  c.inFlight.push(offset);
  w.consumers.set(name, c);
  const from = w.processNo;
  w.process.partition.offsets.set(name, offset).then(() => {
    if (from !== w.processNo) return;
    const now = w.consumers.get(name);
    if (now === undefined) return;
    // Writes are serialized: this one and every one before it are durable.
    now.acknowledged = offset;
    now.inFlight = now.inFlight.slice(now.inFlight.indexOf(offset) + 1);
  }, (error) => {
    if (from === w.processNo) w.fail(`storing a consumer offset failed without a crash: ${error}`);
  });
  w.record(`consumer ${name} at ${offset}`);
}

/** The store loses the target's object, or one of its bytes flips; reads of it must fail closed. */
function sabotage(w: World, target: SabotageTarget | null): void {
  if (target === null) return;
  w.sabotaged.set(target.startOffset, target.endOffset);
  if (target.damage.kind === "lose") {
    w.sim.lose(target.key);
    w.record(`lose ${target.startOffset}`);
  } else {
    w.sim.corrupt(target.key, target.damage.byteIndex);
    w.record(`corrupt ${target.startOffset}`);
  }
}

/** Purge: every message goes, offsets start again at 0 under a new generation, the floor at 0. */
async function purge(w: World): Promise<void> {
  w.record("purge");
  const purging = w.process.partition.purge();
  const done = await withTime(w, purging, 10_000);
  if (done === null) {
    w.fail("a purge did not finish within 10 s of virtual time");
    return;
  }
  w.process.tier.purged(partitionKey);
  w.restartFromEmpty();
  w.fail(w.floorSeen === 0 ? null : `after a purge the floor is ${w.floorSeen}, not 0`);
}

/** The topic is deleted and created again under its name: a new incarnation, the old one GC's. */
async function deleteTopic(w: World): Promise<void> {
  w.record("delete topic");
  w.processNo++;
  void w.process.housekeeping.stop();
  w.process.tier.removePartition(partitionKey);
  // The crashed process's files may refuse to close (its disk lost what it had not synced): that is
  // the crash being simulated, not a failure to report.
  await w.process.control.close().catch(() => {});
  await w.process.partition.close().catch(() => {});
  await w.disk.removeTree(dataPath);
  w.process = await buildProcess(w, await createPartition(w));
  w.restartFromEmpty();
}
