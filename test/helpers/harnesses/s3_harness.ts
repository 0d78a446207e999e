import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { S3ObjectStore } from "../../../src/objectstore/s3/s3_object_store.ts";
import type { S3Settings } from "../../../src/objectstore/s3/s3_settings.ts";
import { RealClock } from "../../../src/runtime/clock/real_clock.ts";

export interface S3Endpoint {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export function s3Settings(e: S3Endpoint, bucket: string, overrides: Partial<S3Settings> = {}): S3Settings {
  return {
    endpoint: e.endpoint,
    region: "us-east-1",
    bucket,
    accessKeyId: e.accessKeyId,
    secretAccessKey: e.secretAccessKey,
    urlStyle: "path",
    conditionalWrites: true,
    connectionIdleTimeoutMs: 5000,
    connectionsMax: 16,
    requestTimeoutMs: 30_000,
    ...overrides,
  };
}

export function ourStore(e: S3Endpoint, bucket: string, overrides: Partial<S3Settings> = {}): S3ObjectStore {
  return new S3ObjectStore(s3Settings(e, bucket, overrides), new RealClock());
}

/** The AWS SDK as an independent reader (and bucket creator). RGW 16 needs checksums only when required. */
export function sdk(e: S3Endpoint): S3Client {
  return new S3Client({
    endpoint: e.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: e.accessKeyId, secretAccessKey: e.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

export async function createBucket(e: S3Endpoint, bucket: string): Promise<void> {
  await sdk(e).send(new CreateBucketCommand({ Bucket: bucket }));
}

/** Reads an object back with the SDK: its bytes and user metadata. */
export async function sdkRead(e: S3Endpoint, bucket: string, key: string) {
  const client = sdk(e);
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const bytes = await got.Body!.transformToByteArray();
  const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  return { bytes, metadata: head.Metadata ?? {} };
}
