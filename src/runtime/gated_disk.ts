import type { Disk } from "./disk.ts";
import { AroundDisk } from "./around_disk.ts";
import type { PieceGate } from "./piece_gate.ts";

/**
 * A `Disk` whose callers resume on the piece gate's turns. Every operation's completion is the
 * start of a stretch of synchronous work for its caller (decoding what was read, issuing the next
 * request), and in a busy loop the completions of dozens of operations land in the same turn of the
 * loop: their stretches add up ahead of the consensus tick. Resuming each caller on a turn of its
 * own bounds that sum to one stretch per turn, like the pieces of an upload. The operation itself
 * is not held back; only the caller's resumption waits.
 */
export class GatedDisk extends AroundDisk {
  constructor(inner: Disk, gate: PieceGate) {
    super(inner, (operation) => gated(gate, operation()));
  }
}

/** Settles like `operation`, on a turn of the gate: a failure waits for its turn as a result does. */
async function gated<T>(gate: PieceGate, operation: Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await operation;
  } catch (error) {
    await gate.turn();
    throw error;
  }
  await gate.turn();
  return result;
}
