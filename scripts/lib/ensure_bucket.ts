import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";

export interface BucketAccess {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * Creates a benchmark's bucket if it is not there yet; an existing one is used as it is. The
 * server never creates buckets (a missing one is a start-up error), so a benchmark that brings its
 * own does, through an independent S3 client.
 */
export async function ensureBucket(access: BucketAccess): Promise<void> {
  const sdk = new S3Client({
    endpoint: access.endpoint,
    region: access.region,
    forcePathStyle: true,
    credentials: { accessKeyId: access.accessKeyId, secretAccessKey: access.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  try {
    await sdk.send(new CreateBucketCommand({ Bucket: access.bucket }));
  } catch (error) {
    if (!/BucketAlready(OwnedByYou|Exists)/.test((error as Error).name)) throw error;
  } finally {
    sdk.destroy();
  }
}
