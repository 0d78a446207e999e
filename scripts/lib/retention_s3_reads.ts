import { GetObjectCommand, HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { join } from "node:path";
import { bucketKeys } from "./bucket_keys.ts";
import { startLocalS3rver } from "./campaign/campaign_tiering.ts";
import { measureColdRead, round } from "./retention_reads.ts";

/**
 * The S3 leg of `bench:retention`'s reads: the tiered topic produced into a server that tiers to
 * s3rver, evicted, and read cold from offset 0 through a librdkafka consumer; then, with the server
 * stopped, the same `.log` objects read by the AWS SDK in ranged GETs of `chunk_size`,
 * `fetch_concurrency` at once, as the chunk cache asks for them: the store's own throughput for the
 * reads a cold consumer causes, which the cold read is judged against.
 */
export interface S3ReadFigures {
  store: "s3rver";
  bytes: number;
  cold_mb_s: number;
  /** The SDK's ranged GETs of the same objects, in the same run. */
  store_ranged_get_mb_s: number;
  cold_vs_store: number;
}

const bucketName = "strata-retention";
/** Bound on the objects one measurement reads: a bucket of this benchmark holds far fewer. */
const objectsMax = 10_000;

export async function measureS3Reads(
  home: string,
  configPath: string,
  dataPath: string,
  reads: { bytes: number; segmentSize: string; chunkBytes: number; fetchConcurrency: number },
): Promise<S3ReadFigures> {
  const s3 = await startLocalS3rver(join(home, "s3rver"), bucketName);
  try {
    const env = {
      STRATA_TIERED_STORAGE_BACKEND: "s3",
      STRATA_TIERED_STORAGE_S3_ENDPOINT: s3.bucket.endpoint,
      STRATA_TIERED_STORAGE_S3_BUCKET: s3.bucket.bucket,
      AWS_ACCESS_KEY_ID: s3.bucket.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.bucket.secretAccessKey,
    };
    const cold = await measureColdRead(configPath, dataPath, reads.bytes, reads.segmentSize, env);
    const store = await rangedGetThroughput(s3.bucket, reads.chunkBytes, reads.fetchConcurrency);
    const coldMbS = cold.bytes / 1e6 / cold.seconds;
    return {
      store: "s3rver",
      bytes: cold.bytes,
      cold_mb_s: round(coldMbS),
      store_ranged_get_mb_s: round(store),
      cold_vs_store: round(coldMbS / store, 100),
    };
  } finally {
    await s3.stop();
  }
}

/** MB/s of every `.log` object read in ranged GETs of `rangeBytes`, `concurrency` in flight. */
async function rangedGetThroughput(
  bucket: { endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string },
  rangeBytes: number,
  concurrency: number,
): Promise<number> {
  const sdk = new S3Client({
    endpoint: bucket.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: bucket.accessKeyId, secretAccessKey: bucket.secretAccessKey },
  });
  try {
    const keys = await bucketKeys(bucket, /\.log$/);
    if (keys.length === 0 || keys.length > objectsMax) {
      throw new Error(`Cannot measure the store's GETs: ${keys.length} .log objects (1 to ${objectsMax})`);
    }
    const ranges: { key: string; start: number; end: number }[] = [];
    for (const key of keys) {
      const head = await sdk.send(new HeadObjectCommand({ Bucket: bucket.bucket, Key: key }));
      const size = head.ContentLength ?? 0;
      for (let start = 0; start < size; start += rangeBytes) {
        ranges.push({ key, start, end: Math.min(size, start + rangeBytes) });
      }
    }
    let next = 0;
    let bytes = 0;
    const started = performance.now();
    // Each runner takes the next range until none is left: the ranges bound every loop.
    const runner = async () => {
      while (next < ranges.length) {
        const r = ranges[next++]!;
        const got = await sdk.send(
          new GetObjectCommand({ Bucket: bucket.bucket, Key: r.key, Range: `bytes=${r.start}-${r.end - 1}` }),
        );
        for await (const piece of got.Body as AsyncIterable<Uint8Array>) bytes += piece.length;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, runner));
    const seconds = (performance.now() - started) / 1000;
    return bytes / 1e6 / seconds;
  } finally {
    sdk.destroy();
  }
}
