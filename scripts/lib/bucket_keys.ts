import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import type { LocalBucket } from "./local_cluster.ts";

/** Keys one listing page asks for. */
const listPageKeys = 1000;
/** Pages one listing reads at most: a script's bucket holds far fewer keys than pages × keys. */
const listPagesMax = 1000;

/** Every key in the bucket that `matches`, sorted, listed through an independent S3 client. */
export async function bucketKeys(bucket: LocalBucket, matches: RegExp): Promise<string[]> {
  const sdk = new S3Client({
    endpoint: bucket.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: bucket.accessKeyId, secretAccessKey: bucket.secretAccessKey },
  });
  const keys: string[] = [];
  try {
    let token: string | undefined;
    for (let page = 0; page < listPagesMax; page++) {
      const listed = await sdk.send(
        new ListObjectsV2Command({ Bucket: bucket.bucket, MaxKeys: listPageKeys, ContinuationToken: token }),
      );
      keys.push(...(listed.Contents ?? []).map((o) => o.Key!).filter((k) => matches.test(k)));
      token = listed.NextContinuationToken;
      if (token === undefined) return keys.sort();
    }
  } finally {
    sdk.destroy();
  }
  throw new Error(`Cannot list the bucket ${bucket.bucket}: more than ${listPagesMax} pages`);
}

/** `.log` objects of partition 0 of topic `topicId` in stream 1, any incarnation. */
export function segmentLogKeysOf(topicId: number): RegExp {
  return new RegExp(`/1/${topicId}/0/[0-9a-f]{16}-0/\\d{20}\\.log$`);
}
