import t from "tap";
import { FsObjectStore } from "../../../src/objectstore/fs_object_store.ts";
import type { ListOptions, ListPage } from "../../../src/objectstore/object_store.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { encodeManifest, type ManifestSegment } from "../../../src/tier/bucket/manifest.ts";
import { manifestKey } from "../../../src/tier/bucket/object_keys.ts";
import { readPartitionPlan, type RestoreStore } from "../../../src/tier/restore/restore_reader.ts";
import {
  handLaidPartition,
  ordersTopicManifest,
  putObject,
  putSegment,
} from "../../helpers/hand_laid_bucket.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

// The bucket's manifests change under a reader: its writer (housekeeping, after a merge or a new
// floor) puts a manifest again between the listing that sized it and the read of it.

const inc = { ...handLaidPartition, createdRevision: "00000000000000aa", purgeGeneration: 0 };
const entry = (start: number): ManifestSegment => ({
  startOffset: start,
  endOffset: start + 9,
  sizeBytes: 100,
  maxTimestampUs: 2,
  logCrc32: 77,
  indexSizeBytes: 8,
  startTimestampUs: 1,
  endTimestampUs: 2,
});
const manifestOf = (starts: number[]) =>
  encodeManifest({
    version: 2,
    streamId: 3,
    topicId: 8,
    partitionId: 0,
    createdRevision: inc.createdRevision,
    purgeGeneration: 0,
    tieredUpToOffset: starts.at(-1)! + 10,
    deletedUpToOffset: 0,
    segments: starts.map(entry),
  });

t.test("a manifest put again between the listing and the read is read again at its new size", async (t) => {
  const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-restore-reader-"), new Rng(1));
  for (const start of [0, 10, 20]) await putSegment(store, inc, start);
  await putObject(store, manifestKey(inc), manifestOf([0, 10]), { "format-version": "2" });
  for (const [what, next] of [["larger", [0, 10, 20]], ["smaller", [10]]] as const) {
    let changed = false;
    // The first listing of meta/ sees the manifest as it was; it is put again right after.
    const racing: RestoreStore = {
      head: (key) => store.head(key),
      getRange: (key, start, end, options) => store.getRange(key, start, end, options),
      list: async (prefix: string, options?: ListOptions): Promise<ListPage> => {
        const page = await store.list(prefix, options);
        if (prefix.includes("/meta/") && !changed) {
          changed = true;
          await putObject(store, manifestKey(inc), manifestOf([...next]), { "format-version": "2" });
        }
        return page;
      },
    };
    const plan = await readPartitionPlan(racing, "strata", ordersTopicManifest(), 0);
    t.ok(changed, `${what}: the manifest changed under the read`);
    t.same(plan.segments.map((s) => s.startOffset), [0, 10, 20], `${what}: the plan is whole`);
  }
});
