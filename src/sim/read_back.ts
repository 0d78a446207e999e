import * as inv from "./invariants.ts";
import { advance, withTime } from "./virtual_time.ts";
import type { World } from "./world.ts";
import { expectedLoss, isDataLoss } from "./world_checks.ts";

/** Messages one read of the read-back asks for, and the bytes it may return. */
const readCountMax = 100;
const readBytesMax = 1 << 20;
/** A bound on the reads of the whole read-back. */
const readsMax = 100_000;

/**
 * No acknowledged message lost or changed: the whole partition is read back through the ordinary
 * poll path (local or remote). Segments the scenario damaged must fail closed; their offsets are
 * skipped and count as accounted for.
 */
export async function readBack(w: World): Promise<void> {
  const log = () => w.process.partition.log;
  const first = log().stats().firstOffset;
  const offsets: number[] = [];
  /** The start of a damaged segment ahead: reads stop short of it, then skip it. */
  let damagedAhead: number | null = null;
  for (let offset = first, reads = 0; reads < readsMax && offset < log().nextOffset; reads++) {
    let r;
    const count = damagedAhead === null || damagedAhead <= offset
      ? readCountMax
      : Math.min(readCountMax, damagedAhead - offset);
    try {
      const got = await withTime(w, log().read(offset, count, readBytesMax), 10_000);
      if (got === null) continue;
      r = got.value;
    } catch (error) {
      // The scenario's own damage is skipped over; any other loss is a violation.
      if (expectedLoss(w, error)) {
        if (error.segment > offset) damagedAhead = error.segment;
        else offset = w.sabotaged.get(error.segment)! + 1;
        continue;
      }
      if (isDataLoss(error)) {
        w.fail(String(error));
        break;
      }
      // A fetch still waiting is transient: let time pass and ask again.
      await advance(w);
      continue;
    }
    w.fail(inv.readBackIntact(r.messages));
    offsets.push(...r.messages.map((m) => m.offset));
    if (r.messages.length === 0) break;
    offset = r.nextOffset;
  }
  const lost = [...w.sabotaged].flatMap(([start, end]) =>
    Array.from({ length: end - start + 1 }, (_, i) => start + i)
  );
  w.fail(inv.acknowledgedPresent(w.acknowledgedBelow, first, [...offsets, ...lost]));
}
