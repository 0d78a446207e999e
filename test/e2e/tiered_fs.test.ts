import { join } from "node:path";
import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { getsMade, produceTierAndVerify, readAllBack } from "../helpers/tiered_e2e.ts";

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
  // Read everything back from offset 0, evicted and local, byte for byte.
  const first = await readAllBack(client);
  t.same(first, { count: 3200, bad: 0 }, "all 3200 messages read back from offset 0, byte for byte");
  t.ok(await getsMade(server.baseUrl) > 0, "the evicted part came from the object store");
  t.equal(await server.stop("SIGTERM"), 0);
  // Restart: the cache survives, so reading again makes no GET for the chunks already cached.
  const again = await spawnServer(["--config", configPath]);
  t.teardown(() => again.stop("SIGKILL"));
  const second = await readAllBack(new StrataClient({ baseUrl: again.baseUrl, encoding: "msgpack" }));
  t.same(second, { count: 3200, bad: 0 }, "read again after the restart");
  t.equal(await getsMade(again.baseUrl), 0, "with zero GETs: every chunk came from the cache");
  t.equal(await again.stop("SIGTERM"), 0);
});
