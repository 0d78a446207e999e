import t from "tap";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";
import { bodyOf, objectStoreContract, patterned } from "../helpers/object_store_contract.ts";
import { createBucket, ourStore, sdkRead } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";

// The contract through the s3 backend against s3rver, a lax S3: it ignores If-None-Match, so the
// HEAD-then-PUT fallback is what is exercised here (conditional_writes = false).
const endpoint = await startS3rver(t);
await createBucket(endpoint, "strata-test");
const store = ourStore(endpoint, "strata-test", { conditionalWrites: false });
t.teardown(() => store.close());

objectStoreContract(t, store, "strata/c1", {
  exactIfAbsent: false,
  abortedPutLeavesNothing: false,
  sentinelDuringDelete: true,
  nestedOrderDiffers:
    "s3rver lists a directory's keys before a sibling key that sorts before them ('a/x' before 'a-b')",
});

t.test("objects written by the s3 backend read back identically with @aws-sdk/client-s3", async (t) => {
  await initCrc32c();
  const bytes = patterned(2_500_000, 9);
  const key = "strata/sdk/00000000000000000000.log";
  await store.put(key, bodyOf(bytes), {
    sizeBytes: bytes.length,
    metadata: { "end-offset": "1234", "format-version": "1" },
    ifAbsent: true,
    crc32: crc32(bytes),
  });
  const read = await sdkRead(endpoint, "strata-test", key);
  t.ok(Buffer.compare(read.bytes, bytes) === 0, "byte for byte");
  t.same(read.metadata, { "end-offset": "1234", "format-version": "1" }, "metadata");
});
