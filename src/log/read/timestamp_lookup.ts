import type { StoredMessage } from "../batch/batch_codec.ts";
import type { BatchVisitor } from "../remote/remote_walk.ts";
import { scanBatches } from "./scan_batches.ts";
import { indexOf, type ReadContext, segmentStart, visitMessages } from "./segment_reads.ts";
import type { Segment } from "../segment/segment.ts";

/**
 * The offset of the first visible message stamped at or after `timestampUs`, from a snapshot of the
 * chain: the first segment whose newest message is that late is searched from its index entry for
 * the timestamp, local or remote (a compressed batch is decompressed, in pieces). Past every
 * message, the next offset.
 */
export async function offsetForTimestamp(
  context: ReadContext,
  chain: readonly Segment[],
  timestampUs: number,
): Promise<number> {
  const segments = [...chain];
  const segment = segments.find((s) => s.visibleSizeBytes > 0 && s.maxTimestampUs >= timestampUs);
  if (segment === undefined) return segments.at(-1)!.visibleEndOffset + 1;
  let found = segment.visibleEndOffset + 1;
  const take = (messages: StoredMessage[]): boolean => {
    const first = messages.find((m) => m.timestampMs * 1000 >= timestampUs);
    if (first !== undefined) found = first.offset;
    return first === undefined;
  };
  const visit: BatchVisitor = (batch, header) => {
    if (header.maxTimestampUs < timestampUs) return true;
    return visitMessages(context, batch, header, take);
  };
  const entry = (await indexOf(context, segment))?.floorByTimestamp(timestampUs) ?? segmentStart;
  if (segment.location === "remote") {
    await context.remote.walk(segment, entry, () => 64 * 1024, visit, null);
    return found;
  }
  const file = await context.disk.open(segment.logPath, { readOnly: true });
  try {
    await scanBatches(file, entry.position, segment.visibleSizeBytes, { verify: false }, visit);
  } finally {
    await file.close();
  }
  return found;
}
