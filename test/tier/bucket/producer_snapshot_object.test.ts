import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import type { ObjectHead } from "../../../src/objectstore/object_store.ts";
import { NotFoundError } from "../../../src/objectstore/object_store_errors.ts";
import { writeProducerSnapshot } from "../../../src/log/producers/producer_snapshots.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import {
  producersAtEndOf,
  producerSnapshotObjectBytesMax,
  readProducerSnapshotObject,
} from "../../../src/tier/bucket/producer_snapshot_object.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// A segment's producer snapshot as the bucket holds it: used whole and only where its segment ends;
// anything else is reported and left out, never taken for a state.
await initCrc32c();
const entries = [{
  producerId: 9,
  epoch: 2,
  batches: [{ firstSequence: 0, lastSequence: 4, firstOffset: 10, lastOffset: 14 }],
  lastTimestampMs: 1_700_000_000_000,
}];

async function snapshotBytes(t: Test, offset: number) {
  const dir = tempDir(t);
  await writeProducerSnapshot(new NodeDisk(), dir, { offset, entries }, "s.producers");
  return new Uint8Array(readFileSync(`${dir}/s.producers`));
}

/** A store of the given objects; `gone` are listed by a HEAD but deleted before the GET. */
function storeOf(objects: Record<string, Uint8Array>, gone: string[] = []) {
  const requests: string[] = [];
  return {
    requests,
    head(key: string): Promise<ObjectHead | null> {
      requests.push(`head ${key}`);
      const bytes = objects[key];
      return Promise.resolve(
        bytes === undefined ? null : { sizeBytes: bytes.length, metadata: {}, etag: "e" },
      );
    },
    getRange(key: string, start: number, end: number): Promise<Uint8Array[]> {
      requests.push(`get ${key}`);
      if (gone.includes(key)) return Promise.reject(new NotFoundError(`Cannot read ${key}: gone`, null));
      return Promise.resolve([objects[key]!.subarray(start, end)]);
    },
  };
}

t.test("a snapshot taken where the segment ends is read whole with a HEAD and one GET", async (t) => {
  const store = storeOf({ "k.producers": await snapshotBytes(t, 15) });
  t.same(await readProducerSnapshotObject(store, "k.producers", 15), {
    kind: "snapshot",
    snapshot: { offset: 15, entries },
  });
  t.same(store.requests, ["head k.producers", "get k.producers"]);
  const heard: string[] = [];
  t.same(await producersAtEndOf(store, "k.log", 14, (r) => heard.push(r)), { offset: 15, entries });
  t.same(heard, []);
});

t.test("none, gone, damaged, taken elsewhere or too large: absent or unusable, with why", async (t) => {
  const good = await snapshotBytes(t, 15);
  const damaged = good.slice();
  damaged[damaged.length - 1]! ^= 0xff;
  const store = storeOf({
    "gone.producers": good,
    "damaged.producers": damaged,
    "elsewhere.producers": await snapshotBytes(t, 99),
    "large.producers": new Uint8Array(producerSnapshotObjectBytesMax + 1),
  }, ["gone.producers"]);
  t.same(await readProducerSnapshotObject(store, "none.producers", 15), { kind: "absent" });
  t.same(await readProducerSnapshotObject(store, "gone.producers", 15), { kind: "absent" });
  t.match(await readProducerSnapshotObject(store, "damaged.producers", 15), {
    kind: "unusable",
    reason: /Cannot read damaged\.producers: checksum mismatch/,
  });
  t.match(await readProducerSnapshotObject(store, "elsewhere.producers", 15), {
    kind: "unusable",
    reason: /taken at 99, not 15/,
  });
  t.match(await readProducerSnapshotObject(store, "large.producers", 15), {
    kind: "unusable",
    reason: /more than 16777216/,
  });
  t.notOk(store.requests.includes("get large.producers"), "a snapshot too large is never read");
  const heard: string[] = [];
  t.equal(await producersAtEndOf(store, "damaged.log", 14, (r) => heard.push(r)), null);
  t.equal(heard.length, 1, "the caller hears why");
});
