import t from "tap";
import { AuthError } from "../../src/objectstore/object_store_errors.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import { bodyOf, objectStoreContract, patterned } from "../helpers/object_store_contract.ts";
import { rgwUnavailableReason, startRgw } from "../helpers/harnesses/rgw_harness.ts";
import { createBucket, ourStore, s3Settings, sdkRead } from "../helpers/harnesses/s3_harness.ts";
import { S3ObjectStore } from "../../src/objectstore/s3/s3_object_store.ts";
import { RealClock } from "../../src/runtime/clock/real_clock.ts";
import { runServerExpectingFailure, spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { measureSteadyState, mib } from "../helpers/measure_put_rss.ts";
import { getsMade, produceTierAndVerify, readAllBack } from "../helpers/tiered_e2e.ts";
import { StrataClient } from "../../src/client/strata_client.ts";
import { kafkaTieredRoundTrip } from "../helpers/kafka/kafka_tiered.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";

// The s3 backend against Ceph's RADOS Gateway, a production S3: strict SigV4, If-None-Match: *
// honoured with 412, ranged GETs answered with 206 as AWS does.
const unavailable = rgwUnavailableReason();
if (unavailable !== null) {
  t.test("RGW tests", { skip: `skipped: ${unavailable}` }, () => {});
} else {
  const endpoint = startRgw(t);
  await createBucket(endpoint, "strata-test");
  const store = ourStore(endpoint, "strata-test", { conditionalWrites: true });
  t.teardown(() => store.close());

  objectStoreContract(t, store, "strata/c1", { exactIfAbsent: true });

  t.test("a wrong secret is refused with Auth, and the message holds neither key", async (t) => {
    const wrong = ourStore(
      { ...endpoint, secretAccessKey: "not-the-secret-0000000000000000000000000" },
      "strata-test",
    );
    t.teardown(() => wrong.close());
    const error = await wrong.head("strata/anything").catch((e) => e);
    const listError = await wrong.list("strata/").catch((e) => e);
    t.ok(error instanceof AuthError, `head: ${error?.name}`);
    t.ok(listError instanceof AuthError, `list: ${listError?.name}`);
    t.match(listError.message, /403 SignatureDoesNotMatch/);
    t.notMatch(listError.message, new RegExp(endpoint.secretAccessKey));
    t.notMatch(listError.message, /not-the-secret/);
  });

  t.test("objects written by the s3 backend read back identically with @aws-sdk/client-s3", async (t) => {
    await initCrc32c();
    const bytes = patterned(5_000_000, 3);
    const key = "strata/sdk/00000000000000001000.log";
    await store.put(key, bodyOf(bytes), {
      sizeBytes: bytes.length,
      metadata: { "end-offset": "1999", "crc32": String(crc32(bytes)), "format-version": "1" },
      ifAbsent: true,
      crc32: crc32(bytes),
    });
    const read = await sdkRead(endpoint, "strata-test", key);
    t.ok(Buffer.compare(read.bytes, bytes) === 0, "byte for byte");
    t.same(
      read.metadata,
      { "end-offset": "1999", "crc32": String(crc32(bytes)), "format-version": "1" },
      "metadata",
    );
  });

  t.test("a tiered topic through Kafka on RGW: kcat reads it back evicted, across a SIGKILL", {
    skip: kcatUnavailable() ?? false,
  }, async (t) => {
    await createBucket(endpoint, "strata-kafka");
    const dir = tempDir(t);
    await kafkaTieredRoundTrip(t, [], {
      STRATA_SYSTEM_PATH: `${dir}/data`,
      STRATA_HTTP_ADDRESS: "127.0.0.1:0",
      STRATA_TIERED_STORAGE_BACKEND: "s3",
      STRATA_TIERED_STORAGE_S3_BUCKET: "strata-kafka",
      STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint.endpoint,
      AWS_ACCESS_KEY_ID: endpoint.accessKeyId,
      AWS_SECRET_ACCESS_KEY: endpoint.secretAccessKey,
    });
  });

  t.test("the server boots on RGW, and refuses to start on a wrong secret or bucket, saying which", async (t) => {
    const dir = tempDir(t);
    const env = (overrides: Record<string, string>) => ({
      STRATA_SYSTEM_PATH: `${dir}/data`,
      STRATA_HTTP_ADDRESS: "127.0.0.1:0",
      STRATA_TIERED_STORAGE_ENABLED: "true",
      STRATA_TIERED_STORAGE_BACKEND: "s3",
      STRATA_TIERED_STORAGE_S3_BUCKET: "strata-test",
      STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint.endpoint,
      AWS_ACCESS_KEY_ID: endpoint.accessKeyId,
      AWS_SECRET_ACCESS_KEY: endpoint.secretAccessKey,
      ...overrides,
    });
    const server = await spawnServer([], env({}));
    t.match(
      server.stderr(),
      /"msg":"object store ready".*"url_style":"path","conditional_create":true,"conditional_writes":true/,
    );
    t.notMatch(server.stderr(), new RegExp(endpoint.secretAccessKey), "the secret is never logged");
    t.equal(await server.stop("SIGTERM"), 0);

    const badSecret = await runServerExpectingFailure(
      [],
      env({ AWS_SECRET_ACCESS_KEY: "wrong-secret-wrong-secret-wrong-secret00" }),
    );
    t.equal(badSecret.code, 2);
    t.match(
      badSecret.stderr,
      /Cannot use the object store: the credentials were rejected by http:\/\/127\.0\.0\.1:\d+ for bucket strata-test/,
    );
    t.notMatch(badSecret.stderr, /wrong-secret/);
    const badBucket = await runServerExpectingFailure(
      [],
      env({ STRATA_TIERED_STORAGE_S3_BUCKET: "no-such-bucket" }),
    );
    t.equal(badBucket.code, 2);
    t.match(badBucket.stderr, /Cannot use the object store: bucket no-such-bucket does not exist/);
  });

  t.test("RSS growth of a PUT to RGW does not scale with the object's size", async (t) => {
    const { small, large } = await measureSteadyState(store, "strata/m");
    t.ok(large < 64 * mib, `1 GiB PUT grew RSS by ${(large / mib).toFixed(1)} MiB`);
    t.ok(large - small <= 16 * mib, `1 GiB grew ${((large - small) / mib).toFixed(1)} MiB more than 256 MiB`);
  });

  t.test("clock skew: a store an hour off re-signs once with the server's Date header and then succeeds", async (t) => {
    class SkewedClock extends RealClock {
      override wallMs(): number {
        return super.wallMs() - 3_600_000;
      }
    }
    const skewed = new S3ObjectStore(s3Settings(endpoint, "strata-test"), new SkewedClock());
    t.teardown(() => skewed.close());
    t.equal(
      await skewed.head("strata/skew/nothing"),
      null,
      "a HEAD learns the offset from the Date header and re-signs",
    );
    const fresh = new S3ObjectStore(s3Settings(endpoint, "strata-test"), new SkewedClock());
    t.teardown(() => fresh.close());
    const page = await fresh.list("strata/skew/");
    t.same(
      page.objects,
      [],
      "a LIST is refused with RequestTimeTooSkewed, re-signed with the server's time, and answered",
    );
    const put = await skewed.put("strata/skew/x", bodyOf(new Uint8Array([1, 2])), {
      sizeBytes: 2,
      metadata: {},
      ifAbsent: false,
    });
    t.ok(put.etag, "later requests, streamed PUTs included, are signed with the learned offset");
    await skewed.delete(["strata/skew/x"]);
  });

  t.test("end to end on RGW: 200 MiB tiered by the real server, objects verified, a sample read back with the SDK", async (t) => {
    const dir = tempDir(t, "strata-tier-rgw-");
    const serverEnv = {
      STRATA_SYSTEM_PATH: `${dir}/data`,
      STRATA_HTTP_ADDRESS: "127.0.0.1:0",
      STRATA_TIERED_STORAGE_BACKEND: "s3",
      STRATA_TIERED_STORAGE_S3_BUCKET: "strata-test",
      STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint.endpoint,
      STRATA_TIERED_STORAGE_S3_PREFIX: "tier-e2e",
      AWS_ACCESS_KEY_ID: endpoint.accessKeyId,
      AWS_SECRET_ACCESS_KEY: endpoint.secretAccessKey,
    };
    const server = await spawnServer([], serverEnv);
    t.teardown(() => server.stop("SIGKILL"));
    const clusterId = /"cluster_id":"([0-9a-f]+)"/.exec(server.stderr())![1]!;
    const client = new StrataClient({ baseUrl: server.baseUrl, encoding: "msgpack" });
    const prefix = (revision: string) => `tier-e2e/${clusterId}/1/1/0/${revision}-0/`;
    await produceTierAndVerify(t, client, `${dir}/data/streams/1/topics/1/partitions/0`, store, prefix);
    const first = (await store.list("tier-e2e/")).objects.find((o) =>
      o.key.endsWith("00000000000000000000.log")
    )!;
    const viaSdk = await sdkRead(endpoint, "strata-test", first.key);
    const viaUs = Buffer.concat(await store.getRange(first.key, 0, first.sizeBytes));
    t.ok(Buffer.compare(viaSdk.bytes, viaUs) === 0, "the SDK reads the same bytes");
    t.equal(
      viaSdk.metadata["end-offset"],
      (await store.head(first.key))?.metadata["end-offset"],
      "and the same metadata",
    );
    t.same(
      await readAllBack(client),
      { count: 3200, bad: 0 },
      "all 3200 messages read back from offset 0, byte for byte",
    );
    t.ok(await getsMade(server.baseUrl) > 0, "the evicted part came from RGW");
    t.equal(await server.stop("SIGTERM"), 0);
    const again = await spawnServer([], serverEnv);
    t.teardown(() => again.stop("SIGKILL"));
    const reread = await readAllBack(new StrataClient({ baseUrl: again.baseUrl, encoding: "msgpack" }));
    t.same(reread, { count: 3200, bad: 0 }, "read again after a restart");
    t.equal(await getsMade(again.baseUrl), 0, "with zero GETs for the chunks already cached");
    t.equal(await again.stop("SIGTERM"), 0);
  });
}
