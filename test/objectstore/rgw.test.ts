import t from "tap";
import { AuthError } from "../../src/objectstore/object_store_errors.ts";
import { crc32c, initCrc32c } from "../../src/runtime/crc32c.ts";
import { bodyOf, objectStoreContract, patterned } from "../helpers/object_store_contract.ts";
import { rgwUnavailableReason, startRgw } from "../helpers/rgw_harness.ts";
import { createBucket, ourStore, sdkRead } from "../helpers/s3_harness.ts";

// Our s3 backend against Ceph's RADOS Gateway, a production S3: strict SigV4, If-None-Match: *
// honoured with 412, ranged GETs answered with 206 as AWS does.
const unavailable = rgwUnavailableReason();
if (unavailable !== null) {
  t.skip(`RGW tests skipped: ${unavailable}`);
} else {
  const endpoint = startRgw(t);
  await createBucket(endpoint, "strata-test");
  const store = ourStore(endpoint, "strata-test", { conditionalWrites: true });
  t.teardown(() => store.close());

  objectStoreContract(t, store, "strata/c1", { exactIfAbsent: true });

  t.test("a wrong secret is refused with Auth, and the message holds neither key", async (t) => {
    const wrong = ourStore({ ...endpoint, secretAccessKey: "not-the-secret-0000000000000000000000000" }, "strata-test");
    t.teardown(() => wrong.close());
    const error = await wrong.head("strata/anything").catch((e) => e);
    const listError = await wrong.list("strata/").catch((e) => e);
    t.ok(error instanceof AuthError, `head: ${error?.name}`);
    t.ok(listError instanceof AuthError, `list: ${listError?.name}`);
    t.match(listError.message, /403 SignatureDoesNotMatch/);
    t.notMatch(listError.message, new RegExp(endpoint.secretAccessKey));
    t.notMatch(listError.message, /not-the-secret/);
  });

  t.test("objects written by our s3 backend read back identically with @aws-sdk/client-s3", async (t) => {
    await initCrc32c();
    const bytes = patterned(5_000_000, 3);
    const key = "strata/sdk/00000000000000001000.log";
    await store.put(key, bodyOf(bytes), {
      sizeBytes: bytes.length,
      metadata: { "end-offset": "1999", "crc32c": String(crc32c(bytes)), "format-version": "1" },
      ifAbsent: true,
      crc32c: crc32c(bytes),
    });
    const read = await sdkRead(endpoint, "strata-test", key);
    t.ok(Buffer.compare(read.bytes, bytes) === 0, "byte for byte");
    t.same(read.metadata, { "end-offset": "1999", "crc32c": String(crc32c(bytes)), "format-version": "1" }, "metadata");
  });
}
