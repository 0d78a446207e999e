import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { createBucket, ourStore, sdkRead } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { produceTierAndVerify, readAllBack } from "../helpers/tiered_e2e.ts";

// The same end-to-end run as on RGW (rgw.test.ts), against s3rver: it always runs, so the s3
// path is covered end to end even where RGW's packages are absent.
t.test("end to end on s3rver: 200 MiB tiered by the real server, objects verified, a sample read back with the SDK", async (t) => {
  const endpoint = await startS3rver(t);
  await createBucket(endpoint, "strata-e2e");
  const store = ourStore(endpoint, "strata-e2e", { conditionalWrites: false });
  t.teardown(() => store.close());
  const dir = tempDir(t, "strata-tier-s3rver-");
  const server = await spawnServer([], {
    STRATA_SYSTEM_PATH: `${dir}/data`,
    STRATA_HTTP_ADDRESS: "127.0.0.1:0",
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: "strata-e2e",
    STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint.endpoint,
    AWS_ACCESS_KEY_ID: endpoint.accessKeyId,
    AWS_SECRET_ACCESS_KEY: endpoint.secretAccessKey,
  });
  t.teardown(() => server.stop("SIGKILL"));
  t.match(
    server.stderr(),
    /"conditional_create":false,"conditional_writes":false/,
    "s3rver ignores If-None-Match: HEAD then PUT",
  );
  const clusterId = /"cluster_id":"([0-9a-f]+)"/.exec(server.stderr())![1]!;
  const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
  await produceTierAndVerify(
    t,
    client,
    `${dir}/data/streams/1/topics/1/partitions/0`,
    store,
    (rev) => `strata/${clusterId}/1/1/0/${rev}-0/`,
  );
  const first = (await store.list(`strata/${clusterId}/`)).objects.find((o) => o.key.endsWith(".log"))!;
  const viaSdk = await sdkRead(endpoint, "strata-e2e", first.key);
  t.ok(
    Buffer.compare(viaSdk.bytes, Buffer.concat(await store.getRange(first.key, 0, first.sizeBytes))) === 0,
    "the SDK reads the same bytes",
  );
  t.same(
    await readAllBack(client),
    { count: 3200, bad: 0 },
    "all 3200 messages read back from offset 0 through the cache",
  );
  t.equal(await server.stop("SIGTERM"), 0);
});
