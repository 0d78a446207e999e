import t from "tap";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { bodyOf, objectStoreContract } from "../helpers/object_store_contract.ts";

// The contract on the fs backend: a directory with exact create-if-absent through link(2).
const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-fs-store-"), new Rng(1));
objectStoreContract(t, store, "strata/c1", { exactIfAbsent: true });

t.test("streamRange reads every piece into one buffer: a stream allocates nothing per piece", async (t) => {
  const bytes = new Uint8Array(3_500_000).map((_, i) => i & 0xff);
  await store.put("strata/c1/one-buffer/x.log", bodyOf(bytes), {
    sizeBytes: bytes.length,
    metadata: {},
    ifAbsent: false,
  });
  const buffers = new Set<ArrayBufferLike>();
  let pieces = 0;
  await store.streamRange("strata/c1/one-buffer/x.log", 0, bytes.length, (piece) => {
    buffers.add(piece.buffer);
    pieces++;
    return Promise.resolve();
  });
  t.equal(pieces, 4, "four pieces of at most 1 MiB");
  t.equal(buffers.size, 1, "all in one buffer");
});
