import { join } from "node:path";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../src/runtime/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { produceTierAndVerify } from "../helpers/tiered_e2e.ts";

// End to end with `deno run` and the shipped config's fs backend: 200 MiB tiered, evicted to the
// envelope, and every object checked against what was produced.
t.test("200 MiB into a tiered topic on the fs backend: floor, envelope and objects", async (t) => {
  const dir = tempDir(t, "strata-tier-fs-");
  const configPath = configCopy(dir);
  const server = await spawnServer(["--config", configPath]);
  t.teardown(() => server.stop("SIGKILL"));
  const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  const store = new FsObjectStore(new NodeDisk(), join(dir, "data", "objects"), new Rng(1));
  const metadata = await (await fetch(`${server.baseUrl}/health`)).json();
  t.equal(metadata.status, "ok");
  const clusterId = /"cluster_id":"([0-9a-f]+)"/.exec(server.stderr())![1]!;
  await produceTierAndVerify(
    t,
    client,
    join(dir, "data", "streams", "1", "topics", "1", "partitions", "0"),
    store,
    (revision) => `strata/${clusterId}/1/1/0/${revision}-0/`,
  );
  t.equal(await server.stop("SIGTERM"), 0);
});
