import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { parseArgs } from "node:util";
import { Readable } from "node:stream";
import { S3ObjectStore } from "../src/objectstore/s3/s3_object_store.ts";
import { crc32 } from "../src/runtime/checksum/crc32.ts";
import { RealClock } from "../src/runtime/clock/real_clock.ts";
import { ensureBucket } from "./lib/ensure_bucket.ts";

/**
 * Upload and download throughput of 64 MiB objects: Strata's s3 backend against @aws-sdk/client-s3
 * (a streamed PutObject and a GetObject) on the same objects in the same run, as ratios.
 *
 *   deno task bench:objectstore [--rounds 5] [--size-mib 64] [--json PATH]
 *   deno task bench:objectstore --endpoint URL --bucket NAME   (credentials: AWS_* variables)
 *
 * Without --endpoint it starts s3rver itself, in its own Node process.
 *
 * `ours` does the same work as the SDK (no checksum); `ours_with_crc32` also declares the
 * object's CRC32 and checks the bytes against it as they go out, as tiering's uploads do.
 */

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "5" },
    "size-mib": { type: "string", default: "64" },
    endpoint: { type: "string" },
    bucket: { type: "string" },
    json: { type: "string" },
  },
});
const rounds = Number(args.rounds);
const sizeBytes = Number(args["size-mib"]) * 1024 * 1024;
const pieceBytes = 1024 * 1024;

let s3rver: Deno.ChildProcess | null = null;
let endpoint = args.endpoint ?? "";
let bucket = args.bucket ?? "strata-bench";
let accessKeyId = Deno.env.get("AWS_ACCESS_KEY_ID") ?? "";
let secretAccessKey = Deno.env.get("AWS_SECRET_ACCESS_KEY") ?? "";
if (endpoint === "") {
  const dir = await Deno.makeTempDir({ prefix: "strata-s3rver-" });
  s3rver = new Deno.Command("node", {
    args: ["--openssl-legacy-provider", "scripts/s3rver.mjs", dir],
    stdout: "piped",
  }).spawn();
  const reader = s3rver.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/port (\d+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error("s3rver exited before listening");
    out += value;
  }
  endpoint = `http://127.0.0.1:${/port (\d+)/.exec(out)![1]}`;
  accessKeyId = "S3RVER";
  secretAccessKey = "S3RVER";
  bucket = "strata-bench";
}

const region = Deno.env.get("AWS_REGION") ?? "us-east-1";
await ensureBucket({ endpoint, region, bucket, accessKeyId, secretAccessKey });
const sdk = new S3Client({
  endpoint,
  region,
  forcePathStyle: true,
  credentials: { accessKeyId, secretAccessKey },
  requestChecksumCalculation: "WHEN_REQUIRED",
  responseChecksumValidation: "WHEN_REQUIRED",
});
const ours = new S3ObjectStore({
  endpoint,
  region,
  bucket,
  accessKeyId,
  secretAccessKey,
  urlStyle: "path",
  conditionalWrites: false,
  connectionIdleTimeoutMs: 5000,
  connectionsMax: 4,
  requestTimeoutMs: 120_000,
}, new RealClock());

const piece = new Uint8Array(pieceBytes);
for (let i = 0; i < piece.length; i++) piece[i] = (i * 131) & 0xff;
// The object is the same 1 MiB piece repeated; its CRC32 is computed once, as an upload would
// have it from the segment before the PUT.
const objectCrc = (() => {
  const all = new Uint8Array(sizeBytes);
  for (let at = 0; at < sizeBytes; at += pieceBytes) all.set(piece, at);
  return crc32(all);
})();
async function* pieces() {
  for (let sent = 0; sent < sizeBytes; sent += pieceBytes) yield piece;
}

const mbPerS = (ms: number) => sizeBytes / 1e6 / (ms / 1000);
const timings = {
  ours: { up: [] as number[], down: [] as number[] },
  oursCrc: { up: [] as number[] },
  sdk: { up: [] as number[], down: [] as number[] },
};

async function oursUpload(key: string) {
  const t0 = performance.now();
  await ours.put(key, pieces, { sizeBytes, metadata: { bench: "1" }, ifAbsent: false });
  timings.ours.up.push(performance.now() - t0);
}
async function oursUploadCrc(key: string) {
  const t0 = performance.now();
  await ours.put(key, pieces, { sizeBytes, metadata: { bench: "1" }, ifAbsent: false, crc32: objectCrc });
  timings.oursCrc.up.push(performance.now() - t0);
}
async function sdkUpload(key: string) {
  const t0 = performance.now();
  await sdk.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: Readable.from(pieces()),
      ContentLength: sizeBytes,
    }),
  );
  timings.sdk.up.push(performance.now() - t0);
}
async function oursDownload(key: string) {
  const t0 = performance.now();
  const got = await ours.getRange(key, 0, sizeBytes);
  if (got.reduce((s, p) => s + p.length, 0) !== sizeBytes) throw new Error("short download (ours)");
  timings.ours.down.push(performance.now() - t0);
}
async function sdkDownload(key: string) {
  const t0 = performance.now();
  const got = await sdk.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  let n = 0;
  for await (const chunk of got.Body as AsyncIterable<Uint8Array>) n += chunk.length;
  if (n !== sizeBytes) throw new Error("short download (sdk)");
  timings.sdk.down.push(performance.now() - t0);
}

console.error(`bench:objectstore: ${rounds} rounds of ${sizeBytes / 2 ** 20} MiB against ${endpoint}`);
for (let r = 0; r < rounds; r++) {
  // Alternate who goes first, so neither always meets a warmer or colder store.
  const [a, b] = r % 2 === 0 ? [oursUpload, sdkUpload] : [sdkUpload, oursUpload];
  await a(`bench/${r}/first`);
  await b(`bench/${r}/second`);
  await oursUploadCrc(`bench/${r}/third`);
  const [c, d] = r % 2 === 0 ? [oursDownload, sdkDownload] : [sdkDownload, oursDownload];
  await c(`bench/${r}/first`);
  await d(`bench/${r}/second`);
  await ours.delete([`bench/${r}/first`]);
  await ours.delete([`bench/${r}/second`]);
  await ours.delete([`bench/${r}/third`]);
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const round = (x: number) => Math.round(x * 10) / 10;
const result = {
  machine: { cpus: navigator.hardwareConcurrency, deno: Deno.version.deno, os: Deno.build.os },
  endpoint: s3rver === null ? endpoint : "s3rver (local)",
  object_mib: sizeBytes / 2 ** 20,
  rounds,
  upload_mb_s: {
    ours: round(mbPerS(median(timings.ours.up))),
    sdk: round(mbPerS(median(timings.sdk.up))),
    ours_with_crc32: round(mbPerS(median(timings.oursCrc.up))),
  },
  download_mb_s: {
    ours: round(mbPerS(median(timings.ours.down))),
    sdk: round(mbPerS(median(timings.sdk.down))),
  },
};
const ratio = (x: { ours: number; sdk: number }) => Math.round((x.ours / x.sdk) * 100) / 100;
console.log(
  `upload    ours ${result.upload_mb_s.ours} MB/s   sdk ${result.upload_mb_s.sdk} MB/s   ratio ${
    ratio(result.upload_mb_s)
  }`,
);
console.log(
  `upload    ours with CRC32 ${result.upload_mb_s.ours_with_crc32} MB/s   ratio ${
    ratio({ ours: result.upload_mb_s.ours_with_crc32, sdk: result.upload_mb_s.sdk })
  }`,
);
console.log(
  `download  ours ${result.download_mb_s.ours} MB/s   sdk ${result.download_mb_s.sdk} MB/s   ratio ${
    ratio(result.download_mb_s)
  }`,
);
const met = ratio(result.upload_mb_s) >= 0.9 && ratio(result.download_mb_s) >= 0.9;
console.log(`target (ours >= 0.9 × SDK both ways): ${met ? "met" : "MISSED"}`);
if (args.json) await Deno.writeTextFile(args.json, JSON.stringify(result, null, 2) + "\n");
await ours.close();
sdk.destroy();
if (s3rver !== null) {
  s3rver.kill("SIGTERM");
  await s3rver.status;
}
