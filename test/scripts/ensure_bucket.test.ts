import { HeadBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import t from "tap";
import { ensureBucket } from "../../scripts/lib/ensure_bucket.ts";
import { type S3Endpoint, sdk, sdkRead } from "../helpers/harnesses/s3_harness.ts";
import { startS3rver } from "../helpers/harnesses/s3rver_harness.ts";

const createObject = (e: S3Endpoint, bucket: string, key: string, bytes: Uint8Array) =>
  sdk(e).send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));

// A benchmark run against a fresh endpoint creates its bucket, and a second run uses the bucket
// that is there instead of failing on it.
t.test("ensureBucket creates a missing bucket and accepts an existing one", async (t) => {
  const e = await startS3rver(t);
  const access = { ...e, region: "us-east-1", bucket: "bench-bucket" };
  await t.rejects(sdk(e).send(new HeadBucketCommand({ Bucket: access.bucket })), "no bucket at first");
  await ensureBucket(access);
  await sdk(e).send(new HeadBucketCommand({ Bucket: access.bucket }));
  await createObject(e, access.bucket, "kept", new Uint8Array([1, 2, 3]));
  await t.resolves(ensureBucket(access), "an existing bucket is no failure");
  t.same(
    [...(await sdkRead(e, access.bucket, "kept")).bytes],
    [1, 2, 3],
    "and is used as it is, objects and all",
  );
});

// Anything but "it already exists" is the caller's to see, with the store's reason.
t.test("ensureBucket passes on other failures", async (t) => {
  const e = await startS3rver(t);
  await t.rejects(ensureBucket({ ...e, region: "us-east-1", bucket: "Not_A_Valid_Bucket" }));
});
