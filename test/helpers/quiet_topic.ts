import { readFileSync, writeFileSync } from "node:fs";
import type { StrataClient } from "../../src/client/strata_client.ts";
import { configCopy } from "./config_copy.ts";
import { realTime, waitFor } from "./wait_for.ts";

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

/**
 * A server config in `dir` that merges soon: housekeeping idle after `idle_timeout`, merges and
 * manifests every second, replaced objects deleted `deleteGrace` after they are found.
 */
export function mergingConfig(dir: string, idleTimeout: string, deleteGrace: string): string {
  const path = configCopy(dir);
  const config = readFileSync(path, "utf8")
    .replace('idle_timeout = "10 s"', `idle_timeout = "${idleTimeout}"`)
    .replace('merge_interval = "60 s"', 'merge_interval = "1 s"')
    .replace('manifest_upload_interval = "60 s"', 'manifest_upload_interval = "1 s"')
    .replace('delete_grace = "60 s"', `delete_grace = "${deleteGrace}"`);
  writeFileSync(path, config);
  return path;
}

/** Creates stream `s` and its quiet topic: segments of 1 MiB rolled after a second, evicted a second later. */
export async function createQuietTopic(
  client: StrataClient,
  options: Record<string, unknown> = {},
): Promise<void> {
  await client.createStream("s");
  await client.createTopic("s", {
    name: "quiet",
    partitions: 1,
    segment_size: "1 MiB",
    segment_max_age: "1 s",
    local_retention_age: "1 s",
    ...options,
  });
}

/**
 * Produces the round from `base` on through `client` and waits for its segment to roll by age;
 * returns the base offset the produce answered.
 */
export async function produceRound(client: StrataClient, base: number): Promise<number> {
  const answered = (await client.produce("s", "quiet", roundOf(base), 0)).base_offset;
  await waitFor(`the segment ending at ${base + perRound - 1} to roll by age`, async () => {
    const sealed = (await segmentsOf(client)).filter((s) => s.sealed);
    return sealed.at(-1)?.end_offset === base + perRound - 1;
  }, { deadlineMs: 15_000, pace: realTime(100) });
  return answered;
}
