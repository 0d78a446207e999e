import * as inv from "./cluster_invariants.ts";
import { producesInFlightMax, streamName, topicName } from "./cluster_settings.ts";
import type { ClusterWorld, PendingProduce } from "./cluster_world.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Messages one read-back poll asks for. */
const readBackCount = 500;
/** Bytes one read-back poll asks for. */
const readBackMaxBytes = 256 * 1024;

/** Produces in flight whose process still runs: a dead process's never end. */
export function liveInFlight(w: ClusterWorld): number {
  let count = 0;
  for (const p of w.pending) {
    if (w.node(p.nodeId).life?.no === p.life) count++;
    else w.pending.delete(p);
  }
  return count;
}

/**
 * Sends one message to the node that leads the partition under the highest epoch, with acks=all
 * (the data plane's produce waits for every in-sync replica), unless `producesInFlightMax` are in
 * flight. Its acknowledgement is recorded with the epoch and node it went to; a refusal or a
 * timeout promises nothing.
 */
export function produceOne(w: ClusterWorld): void {
  if (w.partition === null || liveInFlight(w) >= producesInFlightMax) return;
  const leader = w.leader();
  const life = leader?.life;
  if (leader === null || life === null || life === undefined) return;
  const value = `v${w.producesSent++}`;
  const pending = w.addPending(value, leader, life.no);
  life.broker.dataPlane
    .produce(streamName, topicName, 0, [{ key: null, headers: {}, payload: encoder.encode(value) }])
    .then(
      (result) => acknowledged(w, pending, result.baseOffset),
      (error) => w.record(`produce ${value} to node ${pending.nodeId} refused: ${(error as Error).name}`),
    )
    .finally(() => w.pending.delete(pending));
}

/** A step of the run's idempotent producer (`IdempotentSimProducer`), its acknowledgements checked as the others'. */
export function produceIdempotent(w: ClusterWorld): void {
  w.idempotent.step(w, (pending, offset) => acknowledged(w, pending, offset));
}

/** A step of the run's transactional producer (`TransactionalSimProducer`), its acknowledgements checked as the others'. */
export function produceTransactional(w: ClusterWorld): void {
  w.transactional.step(w, w.workload, (pending, offset) => acknowledged(w, pending, offset));
}

function acknowledged(w: ClusterWorld, p: PendingProduce, offset: number): void {
  if (p.topicLife !== w.topicLife) return w.record(`ack ${p.value} of a deleted topic`);
  const promises = w.promises;
  w.record(`ack ${p.value} at ${offset} by node ${p.nodeId} epoch ${p.leaderEpoch}`);
  w.fail(inv.acknowledgedOnce(promises.acknowledged, offset, p.value));
  w.fail(inv.oneLeaderPerEpoch(promises.ackedLeaderOf, p.leaderEpoch, p.nodeId));
  promises.acknowledged.set(offset, p.value);
  promises.ackedLeaderOf.set(p.leaderEpoch, p.nodeId);
}

/**
 * Reads the partition back from the leader, from offset 0 to its high watermark (read_committed,
 * with `committed`: to its last stable offset, without aborted transactions' records): evicted
 * segments come through the chunk cache. Returns the values by offset; `withTime` moves the clock
 * meanwhile.
 */
export async function readBack(w: ClusterWorld, committed = false): Promise<Map<number, string>> {
  const leader = w.leader();
  const life = leader?.life;
  if (leader === null || life === null || life === undefined) throw new Error("Cannot read back: no leader");
  const read = new Map<number, string>();
  const log = leader.partition(w)!.log;
  const end = committed ? log.lastStableOffset : log.highWatermark;
  let offset = 0;
  for (let polls = 0; offset < end && polls <= end; polls++) {
    const result = await life.broker.dataPlane.poll(streamName, topicName, 0, {
      offset,
      count: readBackCount,
      maxBytes: readBackMaxBytes,
      committed,
    });
    for (const m of result.messages) read.set(m.offset, m.payload === null ? "" : decoder.decode(m.payload));
    result.release();
    if (result.nextOffset <= offset) throw new Error(`Cannot read back: no progress at offset ${offset}`);
    offset = result.nextOffset;
  }
  return read;
}
