import { readdirSync, statSync } from "node:fs";
import type { Test } from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { decodeBatchHeader, decodeMessages } from "../../src/log/batch/batch_codec.ts";
import { segmentStem } from "../../src/log/segment/segment.ts";
import { tableMarkersIn } from "./remote_table_file.ts";
import type { ObjectStore } from "../../src/objectstore/object_store.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import { realTime, waitFor } from "./wait_for.ts";

const mib = 1024 * 1024;
export const segmentBytes = 8 * mib;
export const envelopeBytes = 32 * mib;
const messageBytes = 64 * 1024;
const perRequest = 16;

/** The payload of message `offset`: a deterministic pattern, so any byte can be checked. */
export function payloadOf(offset: number): Uint8Array {
  const p = new Uint8Array(messageBytes);
  const view = new DataView(p.buffer);
  for (let i = 0; i + 4 <= p.length; i += 4096) view.setUint32(i, (offset * 2654435761 + i) >>> 0, true);
  view.setUint32(p.length - 4, offset, true);
  return p;
}

/**
 * Produces `totalBytes` into a tiered topic with 8 MiB segments and a 32 MiB local envelope,
 * waits (through the await endpoint) until the floor passes the last sealed segment, and checks
 * local bytes and every object against what was produced.
 */
export async function produceTierAndVerify(
  t: Test,
  client: StrataClient,
  partitionDir: string,
  store: ObjectStore,
  objectPrefix: (revision: string) => string,
  totalBytes = 200 * mib,
): Promise<void> {
  await initCrc32c();
  await client.createStream("tiered");
  await client.createTopic("tiered", {
    name: "t",
    partitions: 1,
    segment_size: "8 MiB",
    local_retention_size: "32 MiB",
  });
  const messages = totalBytes / messageBytes;
  for (let offset = 0; offset < messages; offset += perRequest) {
    const batch = Array.from({ length: perRequest }, (_, i) => ({ payload: payloadOf(offset + i) }));
    const r = await client.produce("tiered", "t", batch, 0);
    if (r.base_offset !== offset) throw new Error(`unexpected base offset ${r.base_offset}`);
  }
  const stats = await client.partition("tiered", "t", 0) as {
    segments: { end_offset: number; sealed: boolean }[];
  };
  const lastSealedEnd = stats.segments.filter((s) => s.sealed).at(-1)!.end_offset;
  const reached = await client.awaitTiered("tiered", "t", 0, lastSealedEnd + 1, 120_000);
  t.ok(reached, `the floor reached the last sealed segment (offset ${lastSealedEnd + 1})`);

  // Eviction runs from the tick once the floor has passed; give it a bounded moment. It may unlink
  // a .log between the listing and its stat (CI once saw ENOENT there): a file gone counts as 0 bytes.
  let localLogBytes = Infinity;
  await waitFor("eviction down to the envelope plus one segment", () => {
    localLogBytes = readdirSync(partitionDir).filter((n) => n.endsWith(".log")).reduce(
      (n, f) => n + (statSync(`${partitionDir}/${f}`, { throwIfNoEntry: false })?.size ?? 0),
      0,
    );
    return localLogBytes <= envelopeBytes + segmentBytes;
  }, { deadlineMs: 15_000, pace: realTime(100) });
  t.ok(
    localLogBytes <= envelopeBytes + segmentBytes,
    `local .log bytes ${localLogBytes} within the envelope plus one segment`,
  );
  const after = await client.partition("tiered", "t", 0) as Record<string, unknown>;
  t.equal(after["tiered_up_to_offset"], lastSealedEnd + 1);
  t.ok((after["remote_size_bytes"] as number) > 0, "remote bytes reported");

  const markers = new Map(tableMarkersIn(partitionDir).map((m) => [segmentStem(m.startOffset), m]));
  t.ok(markers.size >= 15, `${markers.size} segments evicted`);
  const revision = [...markers.values()][0]!.createdRevision;
  const listed = [];
  let next: string | null = null;
  do {
    const page = await store.list(objectPrefix(revision), next === null ? {} : { startAfter: next });
    listed.push(...page.objects);
    next = page.nextStartAfter;
  } while (next !== null);
  const logs = listed.filter((o) => o.key.endsWith(".log"));
  t.equal(logs.length, stats.segments.filter((s) => s.sealed).length, "one .log object per sealed segment");
  let bad = 0;
  let checkedMessages = 0;
  for (const object of logs) {
    const bytes = Buffer.concat(await store.getRange(object.key, 0, object.sizeBytes));
    const head = await store.head(object.key);
    if (head?.metadata["crc32"] !== String(crc32(bytes))) bad++;
    const stem = object.key.slice(object.key.lastIndexOf("/") + 1, -4);
    const marker = markers.get(stem);
    if (marker !== undefined && marker.logCrc32 !== crc32(bytes)) bad++;
    for (let at = 0; at < bytes.length;) {
      const header = decodeBatchHeader(bytes, at)!;
      for (const m of decodeMessages(bytes.subarray(at, at + header.lengthBytes))) {
        if (Buffer.compare(m.payload!, payloadOf(m.offset)) !== 0) bad++;
        checkedMessages++;
      }
      at += header.lengthBytes;
    }
  }
  t.equal(
    bad,
    0,
    `every object matches what was produced (${checkedMessages} messages checked by payload and CRC32)`,
  );
  t.equal(checkedMessages, lastSealedEnd + 1);
}

/** Reads every message of the tiered topic from offset 0 and checks each payload; returns the count. */
export async function readAllBack(client: StrataClient): Promise<{ count: number; bad: number }> {
  let offset = 0;
  let count = 0;
  let bad = 0;
  for (let round = 0; round < 100_000; round++) {
    const r = await client.poll("tiered", "t", 0, { offset, count: 64, maxBytes: 8 * 1024 * 1024 });
    if (r.messages.length === 0) break;
    for (const m of r.messages) {
      // Dense from 0: each message is the next offset, with the payload produced for it.
      if (m.offset !== count || Buffer.compare(m.payload!, payloadOf(m.offset)) !== 0) bad++;
      count++;
    }
    offset = r.next_offset;
  }
  return { count, bad };
}

/** Object-store GETs the server has made, from its metrics. */
export async function getsMade(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return Number(/strata_objectstore_requests_total\{op="get"\} (\d+)/.exec(text)?.[1] ?? 0);
}
