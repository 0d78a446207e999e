import t from "tap";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { objectStoreContract } from "../helpers/object_store_contract.ts";

// The contract on the fs backend: a directory with exact create-if-absent through link(2).
const store = new FsObjectStore(new NodeDisk(), tempDir(t, "strata-fs-store-"), new Rng(1));
objectStoreContract(t, store, "strata/c1", { exactIfAbsent: true });
