import type { StrataClient } from "../../src/client/strata_client.ts";

// A quiet tiered topic, as the merger's end-to-end tests make one: each round produces a few
// records of about 20 kB and waits for the segment to roll by age, so that every segment is small
// (about 100 kB of a 1 MiB segment_size) and a run of six closes at half of segment_size.

/** Records a round produces: one segment's worth. */
export const perRound = 5;
const payloadBytes = 20_000;

/** A segment as the partition's view lists it. */
export interface SegmentView {
  start_offset: number;
  end_offset: number;
  sealed: boolean;
  location: string;
  size_bytes: number;
}

/** The payload of the record at `offset`: every byte a function of it. */
export function payloadOf(offset: number): Uint8Array {
  return new Uint8Array(payloadBytes).map((_, i) => (offset * 31 + i) & 0xff);
}

/** The round's records, from `base` on: key `key-{offset}`, a header `offset`, `payloadOf(offset)`. */
export function roundOf(base: number) {
  return Array.from({ length: perRound }, (_, i) => ({
    key: `key-${base + i}`,
    headers: { offset: String(base + i) },
    payload: payloadOf(base + i),
  }));
}

/** The segments of partition 0 of `s/{topic}` as `client`'s node lists them. */
export async function segmentsOf(client: StrataClient, topic = "quiet"): Promise<SegmentView[]> {
  return ((await client.partition("s", topic, 0)) as { segments: SegmentView[] }).segments;
}
