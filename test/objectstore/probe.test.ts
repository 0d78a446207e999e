import t from "tap";
import { FsObjectStore } from "../../src/objectstore/fs_object_store.ts";
import { AuthError, TransportError } from "../../src/objectstore/object_store_errors.ts";
import { ObjectStoreProbeError, probeObjectStore } from "../../src/objectstore/probe_object_store.ts";
import { openObjectStore, probeAnswering } from "../../src/objectstore/open_object_store.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { loadConfig } from "../../src/config/load_config.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { createMetricsRegistry } from "../../src/runtime/metrics/metrics.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { RealClock } from "../../src/runtime/clock/real_clock.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { createBucket } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";
import { tempDir } from "../helpers/temp_dir.ts";

await initCrc32c();
const target = { endpoint: "http://store.test", bucket: "b" };

t.test("the fs backend passes the probe, honours create-if-absent, and leaves nothing behind", async (t) => {
  const store = new FsObjectStore(new NodeDisk(), tempDir(t), new Rng(1));
  t.same(await probeObjectStore(store, "strata", target, new Rng(2)), { conditionalCreateHonoured: true });
  t.same((await store.list("strata/_probe/")).objects, [], "the probe object was deleted");
});

t.test("each misconfiguration is named: credentials, bucket, endpoint", async (t) => {
  const cases = [
    {
      faults: { errorRates: { list: { auth: 1 } } },
      pattern: /the credentials were rejected by http:\/\/store\.test for bucket b/,
    },
    {
      faults: { outages: [{ fromMs: 0, toMs: 1e9 }] },
      pattern: /the endpoint http:\/\/store\.test is unreachable/,
    },
  ];
  for (const c of cases) {
    const store = new SimObjectStore(new VirtualClock(), new Rng(1), c.faults);
    const error = await probeObjectStore(store, "strata", target, new Rng(2)).catch((e) => e);
    t.ok(error instanceof ObjectStoreProbeError);
    t.match(error.message, c.pattern);
  }
});

t.test("a probe error keeps the store's error as its cause", async (t) => {
  // Proves the operator's message does not replace the store's account: its class and status survive.
  const store = new SimObjectStore(new VirtualClock(), new Rng(1), { errorRates: { list: { auth: 1 } } });
  const error = await probeObjectStore(store, "strata", target, new Rng(2)).catch((e) => e);
  t.ok(error instanceof ObjectStoreProbeError);
  t.ok(error.cause instanceof AuthError, `the store's AuthError is its cause (${error.cause?.name})`);
  t.equal(error.cause.status, 403);
});

t.test("an endpoint nobody listens on stops start-up with the endpoint named", async (t) => {
  const { config } = loadConfig("", "t", {
    STRATA_TIERED_STORAGE_ENABLED: "true",
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: "b",
    STRATA_TIERED_STORAGE_S3_ENDPOINT: "http://127.0.0.1:9",
    STRATA_TIERED_STORAGE_S3_ACCESS_KEY: "k",
    STRATA_TIERED_STORAGE_S3_SECRET_KEY: "s",
  });
  const deps = {
    disk: new NodeDisk(),
    clock: new RealClock(),
    rng: new Rng(1),
    registry: createMetricsRegistry(),
    logger: silentLogger(),
  };
  const error = await openObjectStore(config.tieredStorage, deps).catch((e) => e);
  t.ok(error instanceof ObjectStoreProbeError);
  t.match(
    error.message,
    /^Cannot use the object store: the endpoint http:\/\/127\.0\.0\.1:9 is unreachable \(ECONNREFUSED\)/,
  );
});

t.test("against s3rver, which ignores If-None-Match, the probe turns conditional writes off (HEAD then PUT)", async (t) => {
  const endpoint = await startS3rver(t);
  await createBucket(endpoint, "probe-bucket");
  const { config } = loadConfig("", "t", {
    STRATA_TIERED_STORAGE_ENABLED: "true",
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: "probe-bucket",
    STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint.endpoint,
    AWS_ACCESS_KEY_ID: endpoint.accessKeyId,
    AWS_SECRET_ACCESS_KEY: endpoint.secretAccessKey,
  });
  const deps = {
    disk: new NodeDisk(),
    clock: new RealClock(),
    rng: new Rng(1),
    registry: createMetricsRegistry(),
    logger: silentLogger(),
  };
  const opened = await openObjectStore(config.tieredStorage, deps);
  t.teardown(() => opened.close());
  t.match(opened.description, {
    backend: "s3",
    url_style: "path",
    conditional_create: false,
    conditional_writes: false,
  });
  const missing = await openObjectStore({
    ...config.tieredStorage,
    s3: { ...config.tieredStorage.s3, bucket: "no-such-bucket" },
  }, deps)
    .catch((e) => e);
  t.match(
    missing.message,
    /^Cannot use the object store: bucket no-such-bucket does not exist at http:\/\/127\.0\.0\.1:\d+/,
  );
});

t.test("a store that answers with a server error is probed again, at most three times", async (t) => {
  const deps = {
    disk: new NodeDisk(),
    clock: new RealClock(),
    rng: new Rng(1),
    registry: createMetricsRegistry(),
    logger: silentLogger(),
  };
  /** A store whose listing answers 500 the first `failures` times (s3rver does while another probe races it). */
  const failing = (failures: number, status: number | null) => {
    const store = new SimObjectStore(new VirtualClock(), new Rng(1));
    const list = store.list.bind(store);
    let calls = 0;
    store.list = (prefix, options) => {
      calls++;
      if (calls <= failures) {
        return Promise.reject(new TransportError("Cannot list: 500 InternalError", status));
      }
      return list(prefix, options);
    };
    return { store, calls: () => calls };
  };
  const twice = failing(2, 500);
  t.same(await probeAnswering(deps, twice.store, "strata", target), { conditionalCreateHonoured: true });
  t.equal(twice.calls(), 3, "the third probe passed");
  const always = failing(10, 500);
  const error = await probeAnswering(deps, always.store, "strata", target).catch((e) => e);
  t.ok(error instanceof ObjectStoreProbeError);
  t.equal(always.calls(), 3, "three probes, then start-up stops");
  const refused = failing(10, null);
  await probeAnswering(deps, refused.store, "strata", target).catch(() => {});
  t.equal(refused.calls(), 1, "a store that does not answer at all is not probed again");
});
