import { openIsalCrc32c } from "../src/runtime/checksum/isal_crc32c.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, getPriority, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { memoryUsage } from "node:process";
import { parseArgs } from "node:util";
import { GCProfiler } from "node:v8";
import { pack } from "msgpackr";
import { StrataClient, type TopicCreate } from "../src/client/strata_client.ts";
import { loadConfig } from "../src/config/load_config.ts";
import { parseBytes } from "../src/config/units.ts";
import { type MessageInput, prepareBatch } from "../src/log/batch/batch_codec.ts";
import { assert } from "../src/runtime/assert.ts";
import { crc32c } from "../src/runtime/checksum/crc32c.ts";
import { LatencyRecorder, type LatencySnapshot } from "../src/runtime/cooperation/pump_metrics.ts";
import { Logger } from "../src/runtime/logger.ts";
import { NodeDisk } from "../src/runtime/disk/node_disk.ts";
import { OsThreadControl } from "../src/runtime/process/os_thread_control.ts";
import { RealClock } from "../src/runtime/clock/real_clock.ts";
import { Rng } from "../src/runtime/rng.ts";
import { StrataServer } from "../src/server/server.ts";
import { writeBufferBytes } from "../src/broker/shards/shard_runtime.ts";
import { clusterRoot } from "../src/tier/bucket/object_keys.ts";
import { clusterIo, kafkaClusterServing } from "../src/cluster_io.ts";
import { openKafkaListener } from "../src/kafka/kafka_service.ts";
import { NodeNetwork } from "../src/runtime/network/node_network.ts";
import { awaitThreeNodes, partitionsLedHere, startBenchClusterPeers } from "./lib/bench_cluster_peers.ts";
import { latenessChartSvg, type PhaseSeries } from "./lib/lateness_chart.ts";
import { ensureBucket } from "./lib/ensure_bucket.ts";
import { type GcPauses, summarizeGcPauses } from "./lib/gc_pauses.ts";
import { pieceStream } from "./lib/piece_stream.ts";
import { readThreadSchedstat, schedstatRates } from "./lib/thread_schedstat.ts";
import { benchIntArg } from "./lib/bench_args.ts";
import { uploadAllWhole, type WholeUpload } from "./lib/whole_upload.ts";
import { segmentStem } from "../src/log/segment/segment.ts";
import { realTime, waitFor } from "../test/helpers/wait_for.ts";

/**
 * The pump-latency benchmark (docs/BENCHMARKS.md, "What it does"): one process, one shard, the real
 * server code, and the consensus tick's lateness measured over phases of equal length:
 *
 *   idle     the server up, no load
 *   produce  a steady producer through the HTTP handler (1 KiB messages in batches of 100)
 *   upload   produce, plus a backlog of sealed segments to upload, present at the phase's start
 *   storm    upload, plus concurrent consumers reading evicted data from offset 0 through the cache
 *   whole    the storm with its backlog uploaded not by the server but by the benchmark's stand-in
 *            (scripts/lib/whole_upload.ts): every segment at once, each read in one call, its CRC32
 *            in one synchronous stretch, sent without yields, on the same loop, disk and store: what
 *            the server's pieces, gate and caps prevent. It holds the whole backlog in memory at
 *            once (about 4.3 GB more with the defaults); leave it out of `--phases` on a machine
 *            without that much to spare
 *
 * Usage: `usage` below (`--help` prints it).
 *
 * The four tuning options (`--piece-size`, `--upload-concurrency`, `--fetch-concurrency`,
 * `--chunk-size`) override the server's own defaults (config.toml), which a run without them uses. With `--cluster` the measured server is node 1 of a 3-node cluster: etcd and two
 * followers run as processes of their own on the same machine, every topic has 3 replicas and
 * three times the partitions, and the load goes to the third node 1 leads; its followers replicate
 * everything and it follows the rest (the whole phase is left out unless `--phases` names it).
 *
 * Rates are MB/s (10^6 bytes), times milliseconds. The targets are checked at the end, from this
 * run's own figures; a missed target is printed and recorded, and the exit code stays 0 (the
 * benchmark measures, it does not judge the machine).
 */

const phaseNames = ["idle", "produce", "upload", "storm", "whole"] as const;
type PhaseName = typeof phaseNames[number];

const usage = `deno task bench:pump [--phase-seconds 20] [--produce-rate 5] [--backlog "4 GiB"]
  [--segment-size "1 GiB"] [--readers 32] [--backend fs|s3 --endpoint URL --bucket NAME]
  [--quick] [--json PATH] [--svg PATH] [--phases ${phaseNames.join(",")}] [--dir PATH]
  [--piece-size SIZE] [--upload-concurrency N] [--fetch-concurrency N] [--chunk-size SIZE]
  [--cluster [--port-base 27000]] [--help]

Phases: ${phaseNames.join(", ")} (what each measures: docs/BENCHMARKS.md, "What it does").`;

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    "phase-seconds": { type: "string" },
    "produce-rate": { type: "string", default: "5" },
    backlog: { type: "string" },
    "segment-size": { type: "string" },
    readers: { type: "string", default: "32" },
    backend: { type: "string", default: "fs" },
    endpoint: { type: "string", default: "" },
    bucket: { type: "string", default: "strata-bench" },
    quick: { type: "boolean", default: false },
    json: { type: "string" },
    svg: { type: "string" },
    phases: { type: "string" },
    cluster: { type: "boolean", default: false },
    "port-base": { type: "string", default: "27000" },
    dir: { type: "string" },
    // No defaults of their own: a run without them measures the server's defaults, whatever they are.
    "piece-size": { type: "string" },
    "upload-concurrency": { type: "string" },
    "fetch-concurrency": { type: "string" },
    "chunk-size": { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(usage);
  Deno.exit(0);
}

function bytesArg(name: string, text: string): number {
  const bytes = parseBytes(text);
  if (bytes === null || bytes <= 0) {
    throw new Error(`Cannot run the benchmark: --${name} ${text} is not a size`);
  }
  return bytes;
}

const quick = args.quick;
const phaseSeconds = Number(args["phase-seconds"] ?? (quick ? 5 : 20));
const produceRateBytesPerSec = Number(args["produce-rate"]) * 1e6;
const backlogBytes = bytesArg("backlog", args.backlog ?? (quick ? "1 GiB" : "4 GiB"));
const backlogSegmentBytes = bytesArg("segment-size", args["segment-size"] ?? (quick ? "256 MiB" : "1 GiB"));
const readers = benchIntArg("readers", args.readers, 1, 1024);
const clustered = args.cluster;
const phases = (args.phases ?? phaseNames.filter((p) => !clustered || p !== "whole").join(","))
  .split(",").map((p) => p.trim()) as PhaseName[];
const portBase = benchIntArg("port-base", args["port-base"], 20_000, 32_000);
for (const p of phases) {
  if (!phaseNames.includes(p)) {
    throw new Error(`Cannot run the benchmark: unknown phase ${JSON.stringify(p)}`);
  }
}
if (!(phaseSeconds > 0 && phaseSeconds <= 3600)) {
  throw new Error("Cannot run the benchmark: --phase-seconds 1 to 3600");
}
if (!(produceRateBytesPerSec > 0)) {
  throw new Error("Cannot run the benchmark: --produce-rate must be positive");
}
/** V8's full collection, exposed by `--v8-flags=--expose-gc` (the task passes it). */
const collectGarbage = (globalThis as { gc?: () => void }).gc;
if (typeof collectGarbage !== "function") {
  throw new Error(
    "Cannot run the benchmark: it needs --v8-flags=--expose-gc to start from a collected heap " +
      "(deno task bench:pump passes it)",
  );
}
const backlogPartitions = 4;
const messageBytes = 1024;
const batchMessages = 100;
/** Evicted data each storm reader starts from: its own partition of a cold topic. */
const coldBytesPerPartition = quick ? 8 * 1024 * 1024 : 64 * 1024 * 1024;
const coldSegmentBytes = quick ? 2 * 1024 * 1024 : 16 * 1024 * 1024;
/**
 * Backlog and probe data: the upload path does not care about message size, so 64 KiB messages, 15
 * to a batch, which fits the shard's 1 MiB write buffer. Sixteen (1 MiB plus headers) did not: each
 * batch took a buffer of its own, and a backlog's 4 GiB of them left the phase after it starting
 * 70 to 90 MB over the idle RSS (docs/TUNING.md, "Buffer pools").
 */
const bulkMessageBytes = 64 * 1024;
const bulkBatchMessages = 15;
const fillBatchBytes = bulkMessageBytes * bulkBatchMessages;
const pollMessages = 100;
/** Cold topics hold 1 KiB messages; the sealed part (what is evicted) is what the readers walk. */
const coldMessagesPerPartition = Math.floor(coldBytesPerPartition / messageBytes);

/** The entries that were given: an option left out keeps the server's default. */
function definedOnly(entries: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(entries).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

const dir = args.dir ?? mkdtempSync(join(tmpdir(), "strata-bench-pump-"));
const ownsDir = args.dir === undefined;
const env: Record<string, string> = {
  STRATA_SYSTEM_PATH: join(dir, "data"),
  STRATA_SYSTEM_SHARDS: "1",
  STRATA_LOG_LEVEL: "warn",
  ...definedOnly({
    STRATA_TIERED_STORAGE_UPLOAD_PIECE_SIZE: args["piece-size"],
    STRATA_TIERED_STORAGE_UPLOAD_CONCURRENCY: args["upload-concurrency"],
    STRATA_TIERED_STORAGE_FETCH_CONCURRENCY: args["fetch-concurrency"],
    STRATA_TIERED_STORAGE_CACHE_CHUNK_SIZE: args["chunk-size"],
  }),
  ...(args.backend === "s3"
    ? {
      STRATA_TIERED_STORAGE_BACKEND: "s3",
      STRATA_TIERED_STORAGE_S3_ENDPOINT: args.endpoint,
      STRATA_TIERED_STORAGE_S3_BUCKET: args.bucket,
    }
    : {}),
};
if (clustered && args.backend !== "fs") {
  throw new Error("Cannot run the benchmark: --cluster tiers to fs only");
}
// In cluster mode every node tiers to one fs store, which its followers share.
if (clustered) env.STRATA_TIERED_STORAGE_FS_PATH = join(dir, "objects");
const peers = clustered
  ? await startBenchClusterPeers(dir, portBase, env.STRATA_TIERED_STORAGE_FS_PATH!)
  : null;
const { config, secrets } = loadConfig(peers?.measuredConfig ?? "", "bench-pump", {
  ...Deno.env.toObject(),
  ...env,
});
if (config.tieredStorage.backend === "s3") {
  const s3 = config.tieredStorage.s3;
  await ensureBucket({
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket,
    accessKeyId: s3.accessKey,
    secretAccessKey: s3.secretKey,
  });
}
const logger = new Logger({ level: "warn", secrets });
const clock = new RealClock();
const disk = new NodeDisk();
// As the server's entry point does: the file workers come up before the phases, not in one.
disk.startWorkers();
const network = new NodeNetwork();
// The loop thread's priority as `deno task server` sets it ([system] loop_thread_nice); the
// benchmark's load shares the loop's thread, as it shares its loop.
const server = await StrataServer.open({
  config,
  logger,
  clock,
  disk,
  rng: Rng.fromEntropy(),
  threads: new OsThreadControl(),
  clusterIo: clustered ? clusterIo(network, clock, config.kafka.maxFrameBytes) : undefined,
  openNativeCrc32c: openIsalCrc32c,
});
// In cluster mode the followers fetch from node 1's Kafka listener.
const kafka = server.cluster === null ? null : await openKafkaListener({
  config: config.kafka,
  catalog: server.catalog,
  data: server.dataPlane,
  network,
  registry: server.registry,
  cluster: kafkaClusterServing(server.cluster),
  clock,
  turn: () => server.pieceGate.turn(),
  logger,
});
if (server.cluster !== null) await awaitThreeNodes(server.cluster);
const client = new StrataClient({ baseUrl: "http://bench", encoding: "msgpack", fetch: server.handler });
const pump = server.pumps[0]!;
const stream = "bench";
const sleep = (ms: number) => clock.sleep(ms);

function progress(text: string): void {
  console.error(`[bench:pump] ${text}`);
}

/** The partitions of each topic the load uses: all of them, or in cluster mode those node 1 leads. */
const loaded = new Map<string, number[]>();

/** Creates a topic whose load uses `count` partitions (in cluster mode: of 3 × as many, 3 replicas each). */
async function createBenchTopic(topic: TopicCreate & { partitions?: number }): Promise<number[]> {
  const count = topic.partitions ?? 1;
  if (server.cluster === null) {
    await client.createTopic(stream, topic);
    loaded.set(topic.name, Array.from({ length: count }, (_, p) => p));
  } else {
    const created = await client.createTopic(stream, {
      ...topic,
      partitions: 3 * count,
      replication_factor: 3,
    });
    const streamId = (await client.getStream(stream) as { id: number }).id;
    const led = await partitionsLedHere(server.cluster, {
      streamId,
      topicId: created.id as number,
      partitions: 3 * count,
    });
    assert(led.length === count, `Cannot load ${topic.name}: node 1 leads ${led.length} of its partitions`);
    loaded.set(topic.name, led);
  }
  return loaded.get(topic.name)!;
}

/**
 * Appends `bytes` to a partition straight through the broker, in batches of `perBatch` messages of
 * `messageSize` bytes, 64 appends at a time so group commit shares the fsyncs.
 */
async function fill(topic: string, partition: number, bytes: number, messageSize: number, perBatch: number) {
  const payload = new Uint8Array(messageSize).map((_, i) => (i * 31 + partition) & 0xff);
  const batch: MessageInput[] = Array.from({ length: perBatch }, () => ({ key: null, headers: {}, payload }));
  assert(
    prepareBatch(batch, Date.now()).lengthBytes <= writeBufferBytes,
    "Cannot fill: a batch must fit the shard's write buffer, or each takes a buffer of its own",
  );
  const batches = Math.ceil(bytes / (perBatch * messageSize));
  for (let done = 0; done < batches; done += 64) {
    const wave = Math.min(64, batches - done);
    await Promise.all(
      Array.from({ length: wave }, () => server.dataPlane.produce(stream, topic, partition, batch)),
    );
  }
}

/** Backlog and probe data, in batches of `fillBatchBytes`. */
const fillBulk = (topic: string, partition: number, bytes: number) =>
  fill(topic, partition, bytes, bulkMessageBytes, bulkBatchMessages);

async function partitionStats(topic: string, p: number) {
  return await client.partition(stream, topic, p) as {
    tiered_up_to_offset: number;
    segments: {
      start_offset: number;
      end_offset: number;
      sealed: boolean;
      location: string;
      size_bytes: number;
    }[];
  };
}

/** True once every sealed segment of the topic is uploaded (and, when asked, evicted). */
async function tieredAll(topic: string, evicted: boolean): Promise<boolean> {
  for (const p of loaded.get(topic)!) {
    const s = await partitionStats(topic, p);
    const sealed = s.segments.filter((x) => x.sealed);
    const last = sealed.at(-1);
    if (last === undefined) continue;
    if (s.tiered_up_to_offset < last.end_offset + 1) return false;
    if (evicted && sealed.some((x) => x.location !== "remote")) return false;
  }
  return true;
}

/** How often the setup looks at what it waits for: each look asks every loaded partition for its stats. */
const setupPace = realTime(200);

/** A cold topic for one storm: a partition per reader, uploaded and evicted before the phase. */
async function prepareCold(topic: string): Promise<void> {
  const partitions = await createBenchTopic({
    name: topic,
    partitions: readers,
    segment_size: coldSegmentBytes,
    local_retention_size: "1 MiB",
  });
  for (const p of partitions) {
    // Cold data is what the readers poll: 1 KiB messages in batches of 100, as the producer writes them.
    await fill(topic, p, coldBytesPerPartition + coldSegmentBytes, messageBytes, batchMessages);
  }
  progress(
    `${topic}: ${readers} × ${coldBytesPerPartition / 1048576} MiB written; waiting for upload and eviction`,
  );
  await waitFor(`uploading and evicting ${topic}`, () => tieredAll(topic, true), {
    deadlineMs: 1_800_000,
    pace: setupPace,
  });
}

/** The backlog of one phase: sealed segments of an untiered topic, made tiered at the phase's start. */
async function prepareBacklog(topic: string): Promise<void> {
  const partitions = await createBenchTopic({
    name: topic,
    partitions: backlogPartitions,
    segment_size: backlogSegmentBytes,
    tiered: false,
  });
  const perPartition = Math.ceil(backlogBytes / backlogPartitions / backlogSegmentBytes) *
    backlogSegmentBytes;
  for (const p of partitions) {
    // One batch past the last segment boundary, so every backlog segment is sealed.
    await fillBulk(topic, p, perPartition + fillBatchBytes);
  }
  progress(`${topic}: ${(backlogPartitions * perPartition) / 2 ** 30} GiB of sealed segments`);
}

async function dropTopic(topic: string): Promise<void> {
  const streamId = (await client.getStream(stream) as { id: number }).id;
  const topicId = (await client.getTopic(stream, topic) as { id: number }).id;
  await client.deleteTopic(stream, topic);
  // An upload of the topic still in flight would land after the deletes below: wait for it to report.
  await orphanedUploadsDone();
  // The deleted topic's objects would wait for the orphan sweep; the benchmark frees the store now,
  // so that a full run's three backlogs fit a test store (RGW's is 10 GiB).
  const root = clusterRoot(config.tieredStorage.s3.prefix, server.catalog.clusterId);
  await deleteUnder(`${root}${streamId}/${topicId}/`);
  await deleteUnder(`${root}meta/${streamId}/${topicId}/`);
  await deleteUnder(wholeUploadPrefix(topic));
}

/** How long a deleted topic's uploads in flight may take to report. */
const orphanedUploadsWaitMs = 120_000;

/** Waits until no shard has an upload of a removed partition in flight. */
async function orphanedUploadsDone(): Promise<void> {
  const orphaned = () => server.shards.reduce((n, s) => n + (s.tier?.orphanedUploads() ?? 0), 0);
  await waitFor("the deleted topic's uploads in flight to report", () => orphaned() === 0, {
    deadlineMs: orphanedUploadsWaitMs,
    pace: realTime(10),
  });
}

/** A bound on the pages one prefix is freed in: a run's topics hold a few hundred objects each. */
const deletePagesMax = 100;

/** Deletes every object under a prefix, a listed page at a time. */
async function deleteUnder(prefix: string): Promise<void> {
  const store = server.objectStore!.store;
  for (let pages = 0; pages < deletePagesMax; pages++) {
    const page = await store.list(prefix, { maxKeys: 1000 });
    if (page.objects.length === 0) return;
    const failed = (await store.delete(page.objects.map((o) => o.key))).filter((r) => r.error !== null);
    if (failed.length > 0) throw new Error(`Cannot free ${prefix}: ${failed[0]!.error!.message}`);
  }
  throw new Error(`Cannot free ${prefix}: still objects after ${deletePagesMax} pages`);
}

/** A segment's `.log` or `.index` file of a topic's partition. */
async function segmentFilePath(
  topic: string,
  partition: number,
  startOffset: number,
  extension: ".log" | ".index",
): Promise<string> {
  const streamId = (await client.getStream(stream) as { id: number }).id;
  const topicId = (await client.getTopic(stream, topic) as { id: number }).id;
  return `${config.system.path}/streams/${streamId}/topics/${topicId}/partitions/${partition}/${
    segmentStem(startOffset)
  }${extension}`;
}

// ---- the whole phase's stand-in upload ----------------------------------------------------------

/** Where the stand-in puts a backlog's files: apart from the cluster's keys, which are the server's. */
const wholeUploadPrefix = (topic: string) =>
  `${config.tieredStorage.s3.prefix}/bench-whole-uploads/${topic}/`;

/** The stand-in's work for a backlog: the `.log` and `.index` of every sealed segment it loaded. */
async function wholeUploadsOf(topic: string): Promise<WholeUpload[]> {
  const uploads: WholeUpload[] = [];
  for (const p of loaded.get(topic)!) {
    for (const segment of (await partitionStats(topic, p)).segments.filter((s) => s.sealed)) {
      for (const extension of [".log", ".index"] as const) {
        uploads.push({
          path: await segmentFilePath(topic, p, segment.start_offset, extension),
          key: `${wholeUploadPrefix(topic)}${p}/${segmentStem(segment.start_offset)}${extension}`,
        });
      }
    }
  }
  return uploads;
}

/** How long a phase's backlog may take to upload, the time past the phase's end included. */
const backlogUploadWaitMs = 3_600_000;

/**
 * Starts a phase's backlog upload: the server's, by making the topic tiered, or in the whole phase
 * the stand-in's (`whole_upload.ts`), every file at once. Returns whether it has finished; a
 * stand-in upload that failed throws its error there.
 */
async function startBacklogUpload(name: PhaseName, backlog: string): Promise<() => Promise<boolean>> {
  if (name !== "whole") {
    await client.patchTopic(stream, backlog, { tiered: true });
    return () => tieredAll(backlog, false);
  }
  const uploads = await wholeUploadsOf(backlog);
  let finished = false;
  let failure: unknown = null;
  uploadAllWhole(disk, server.objectStore!.store, uploads, clock.nowMs() + backlogUploadWaitMs)
    .then(() => (finished = true), (error) => (failure = error ?? new Error("the stand-in's upload failed")));
  return () => failure !== null ? Promise.reject(failure) : Promise.resolve(finished);
}

// ---- ceilings measured in the same run --------------------------------------------------------

/** Median time to read one 1 MiB piece of a segment file and CRC32C it: what one piece can cost. */
async function measurePieceMs(path: string): Promise<number> {
  const file = await disk.open(path, { readOnly: true });
  const times: number[] = [];
  const piece = new Uint8Array(1024 * 1024);
  try {
    const size = await file.sizeBytes();
    for (let i = 0; i < 64; i++) {
      const at = (i * 7919 * piece.length) % Math.max(1, size - piece.length);
      const started = clock.nowMs();
      await file.readAt(piece, at);
      crc32c(piece);
      times.push(clock.nowMs() - started);
    }
  } finally {
    await file.close();
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

/**
 * Raw copy speed of a segment file (read and write in 1 MiB pieces, one fsync at the end), through
 * the page cache or around it (`bypassCache`, as the fs store writes its objects).
 */
async function measureCopyMbS(path: string, bypassCache: boolean): Promise<number> {
  const source = await disk.open(path, { readOnly: true });
  const target = `${dir}/copy-probe.bin`;
  const sink = await disk.open(target, { create: true, bypassCache });
  const piece = new Uint8Array(1024 * 1024);
  const started = clock.nowMs();
  let copied = 0;
  try {
    const size = await source.sizeBytes();
    while (copied < size) {
      const n = await source.readAt(piece, copied);
      if (n === 0) break;
      await sink.writeAt(piece.subarray(0, n), copied);
      copied += n;
    }
    await sink.sync();
  } finally {
    await source.close();
    await sink.close();
    rmSync(target, { force: true });
  }
  return copied / 1e6 / ((clock.nowMs() - started) / 1000);
}

// ---- load -------------------------------------------------------------------------------------

interface Load {
  stop(): Promise<void>;
}

/**
 * A request straight to the server's fetch handler, as `Deno.serve` would pass it: the server's
 * own work (routing, decoding, the log, encoding the answer) runs on the loop, the load's does not
 * (bodies are encoded once and answers are read as bytes, never decoded).
 */
async function request(method: string, path: string, body?: Uint8Array<ArrayBuffer>): Promise<Response> {
  const response = await server.handler(
    new Request(`http://bench${path}`, {
      method,
      headers: {
        "accept": "application/msgpack",
        ...(body !== undefined
          ? { "content-type": "application/msgpack", "content-length": String(body.length) }
          : {}),
      },
      // As `Deno.serve` hands over a kept-alive connection's body, as a producer's are: a byte array
      // given to the constructor would be copied whole per request, garbage a client elsewhere would
      // not leave in the server's process.
      ...(body !== undefined ? { body: pieceStream(body, 64 * 1024) } : {}),
    }),
  );
  // The answer is read piece by piece and dropped, as a client elsewhere would read it off its
  // socket: gathering it into one buffer would be the client's garbage on the server's thread.
  if (response.body !== null) { for await (const _piece of response.body) { /* read and dropped */ } }
  return response;
}

/** A steady producer at `produceRateBytesPerSec`, one request at a time, latency per request. */
function startProducer(latency: LatencyRecorder): Load {
  const payload = new Uint8Array(messageBytes).map((_, i) => (i * 13) & 0xff);
  const body = new Uint8Array(
    pack({
      partition: loaded.get("produce")![0],
      messages: Array.from({ length: batchMessages }, () => ({ payload })),
    }),
  );
  const intervalMs = (messageBytes * batchMessages * 1000) / produceRateBytesPerSec;
  let running = true;
  const loop = (async () => {
    let next = clock.nowMs();
    while (running) {
      const started = clock.nowMs();
      const response = await request("POST", `/streams/${stream}/topics/produce/messages`, body);
      if (response.status !== 200) throw new Error(`Cannot produce: ${response.status}`);
      latency.recordMs(clock.nowMs() - started);
      next += intervalMs;
      const wait = next - clock.nowMs();
      if (wait > 0) await sleep(wait);
      else next = clock.nowMs(); // behind: no burst to catch up, the rate just falls
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * Readers of a cold topic from offset 0, each its own partition, polling as a default client does
 * (100 messages); a transient 503 is retried after 50 ms. The next offset comes from a header-free
 * count: messages are 1 KiB and dense, so offset + 100 is where the next poll starts.
 */
function startReaders(topic: string, latency: LatencyRecorder, counts: { transient: number }): Load {
  let running = true;
  const loops = loaded.get(topic)!.map((p) =>
    (async () => {
      let offset = 0;
      while (running) {
        const started = clock.nowMs();
        const response = await request(
          "GET",
          `/streams/${stream}/topics/${topic}/partitions/${p}/messages?offset=${offset}&count=${pollMessages}`,
        );
        if (response.status === 200) {
          latency.recordMs(clock.nowMs() - started);
          offset = offset + pollMessages >= coldMessagesPerPartition ? 0 : offset + pollMessages;
        } else {
          counts.transient++;
          await sleep(50);
        }
      }
    })()
  );
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The bytes a backlog holds: whole segments per partition. */
function backlogTotalBytes(): number {
  return Math.ceil(backlogBytes / backlogPartitions / backlogSegmentBytes) * backlogSegmentBytes *
    backlogPartitions;
}

// ---- phases -----------------------------------------------------------------------------------

/** With the phase's collections (V8's GC profiler): a worst tick later than every pause was not one collection's alone. */
interface PhaseResult extends GcPauses {
  tick_lateness_ms: { p50: number; p99: number; p999: number; max: number };
  missed_ticks: number;
  upload_mb_s: number;
  produce_latency_ms: { p50: number; p99: number };
  cold_poll_ms: { p50: number; p99: number };
  /** Polls the readers had answered in the phase: with `cold_poll_ms`, how much reading the phase did. */
  cold_polls: number;
  rss_mb: number;
  /** The RSS when the phase began: what it inherited from the phases and the setup before it. */
  rss_start_mb: number;
  transient_replies: number;
  /**
   * The event loop's thread, per second of the phase: time on a core, and time it was ready but
   * waited for one (Linux's schedstat; null elsewhere). A wait shows the machine delayed the tick.
   */
  loop_cpu_ms_per_s: number | null;
  loop_wait_ms_per_s: number | null;
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));
/** Deno's GC profiler reports each collection's cost in nanoseconds (Node's in microseconds). */
const gcCostMsPerUnit = 1e-6;
const pct = (s: LatencySnapshot) => ({ p50: round(s.p50Ms), p99: round(s.p99Ms) });
const tickLatenessMs = (s: { p50Ms: number; p99Ms: number; p999Ms: number; maxMs: number }) => ({
  p50: round(s.p50Ms),
  p99: round(s.p99Ms),
  p999: round(s.p999Ms),
  max: round(s.maxMs),
});

async function runPhase(name: PhaseName, series: PhaseSeries[]): Promise<PhaseResult> {
  const withUpload = name === "upload" || name === "storm" || name === "whole";
  const withReaders = name === "storm" || name === "whole";
  const backlog = `backlog-${name}`;
  if (withUpload) await prepareBacklog(backlog);
  if (withReaders) await prepareCold(`cold-${name}`);
  progress(`phase ${name}: ${phaseSeconds} s`);
  const produceLatency = new LatencyRecorder();
  const pollLatency = new LatencyRecorder();
  const transient = { transient: 0 };
  const samples: PhaseSeries["samples"] = [];
  const startedMs = clock.nowMs();
  pump.resetSnapshot();
  const schedStart = readThreadSchedstat();
  const gcProfiler = new GCProfiler();
  gcProfiler.start();
  pump.observeLateness((atMs, latenessMs) => {
    if (samples.length < 1_000_000) samples.push({ atS: (atMs - startedMs) / 1000, latenessMs });
  });
  const rssStart = memoryUsage.rss();
  let rssMax = rssStart;
  const rssTimer = setInterval(() => (rssMax = Math.max(rssMax, memoryUsage.rss())), 100);
  const uploaded = withUpload ? await startBacklogUpload(name, backlog) : null;
  const loads: Load[] = [];
  if (name !== "idle") loads.push(startProducer(produceLatency));
  if (withReaders) loads.push(startReaders(`cold-${name}`, pollLatency, transient));
  let uploadDoneS: number | null = null;
  while (clock.nowMs() - startedMs < phaseSeconds * 1000) {
    await sleep(100);
    if (uploaded !== null && uploadDoneS === null && await uploaded()) {
      uploadDoneS = (clock.nowMs() - startedMs) / 1000;
    }
  }
  const lateness = pump.snapshot();
  const sched = schedstatRates(schedStart, readThreadSchedstat(), clock.nowMs() - startedMs);
  const gc = summarizeGcPauses(gcProfiler.stop()?.statistics ?? [], gcCostMsPerUnit);
  pump.observeLateness(null);
  for (const load of loads) await load.stop();
  clearInterval(rssTimer);
  series.push({ name, samples, durationS: phaseSeconds });
  // Uploads still running would spill into the next phase: wait for them, then free the disk. The
  // upload rate is the whole backlog over the time it took, which may run past the phase's end.
  if (uploaded !== null && uploadDoneS === null) {
    await waitFor(`finishing the ${name} backlog`, uploaded, {
      deadlineMs: backlogUploadWaitMs,
      pace: setupPace,
    });
    uploadDoneS = (clock.nowMs() - startedMs) / 1000;
  }
  const polls = pollLatency.snapshot();
  const result: PhaseResult = {
    tick_lateness_ms: tickLatenessMs(lateness),
    missed_ticks: lateness.missedTicks,
    upload_mb_s: withUpload ? round(backlogTotalBytes() / 1e6 / uploadDoneS!, 1) : 0,
    produce_latency_ms: pct(produceLatency.snapshot()),
    cold_poll_ms: pct(polls),
    cold_polls: polls.count,
    rss_mb: round(rssMax / 1e6, 1),
    rss_start_mb: round(rssStart / 1e6, 1),
    transient_replies: transient.transient,
    loop_cpu_ms_per_s: sched?.onCpuMsPerS ?? null,
    loop_wait_ms_per_s: sched?.runqueueWaitMsPerS ?? null,
    ...gc,
  };
  progress(`phase ${name}: ${JSON.stringify(result)}`);
  if (withUpload) await dropTopic(backlog);
  if (withReaders) await dropTopic(`cold-${name}`);
  return result;
}

// ---- run --------------------------------------------------------------------------------------

let exitCode = 0;
try {
  await client.createStream(stream);
  await createBenchTopic({ name: "produce", segment_size: "1 GiB" });
  // The ceilings, from a segment like the backlog's.
  const [probePartition] = await createBenchTopic({
    name: "probe",
    segment_size: backlogSegmentBytes,
    tiered: false,
  });
  await fillBulk("probe", probePartition!, Math.min(backlogSegmentBytes, 256 * 1024 * 1024) + fillBatchBytes);
  const probeLog = await segmentFilePath("probe", probePartition!, 0, ".log");
  const pieceMs = await measurePieceMs(probeLog);
  // The ceiling is the faster of the two ways to copy: the fs store's own (around the page cache)
  // and a plain one (through it), whichever the machine it runs on favours.
  const copyBufferedMbS = await measureCopyMbS(probeLog, false);
  const copyDirectMbS = await measureCopyMbS(probeLog, true);
  const copyMbS = Math.max(copyBufferedMbS, copyDirectMbS);
  await dropTopic("probe");
  progress(
    `piece_ms ${pieceMs.toFixed(3)}, copy_mb_s ${copyMbS.toFixed(0)} ` +
      `(buffered ${copyBufferedMbS.toFixed(0)}, direct ${copyDirectMbS.toFixed(0)})`,
  );
  // The probe's fill leaves tens of megabytes of dead buffers, which V8 frees only at its next full
  // collection: the idle phase's RSS would be the setup's leftovers, not the server at rest. (Once
  // freed, glibc gives them back to the system only when nothing live sits above them in its heap,
  // so some of what the setup leaves can stay resident; docs/TUNING.md, "What sets the RSS".)
  collectGarbage();
  // The collection holds the loop for tens of milliseconds: the ticks that fell due within it fire
  // late, and must do so before the first phase starts counting.
  await sleep(1000);

  const series: PhaseSeries[] = [];
  const results: Partial<Record<PhaseName, PhaseResult>> = {};
  for (const name of phases) results[name] = await runPhase(name, series);

  const machine = {
    cpu: cpus()[0]?.model ?? "unknown",
    cpus: cpus().length,
    memory_gib: round(totalmem() / 2 ** 30, 1),
    os: `${Deno.build.os} ${release()}`,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    backend: args.backend,
  };
  const report = {
    machine,
    settings: {
      phase_seconds: phaseSeconds,
      produce_rate_mb_s: produceRateBytesPerSec / 1e6,
      backlog_bytes: backlogBytes,
      segment_size_bytes: backlogSegmentBytes,
      readers,
      upload_piece_size: config.tieredStorage.uploadPieceBytes,
      upload_concurrency: config.tieredStorage.uploadConcurrency,
      fetch_concurrency: config.tieredStorage.fetchConcurrency,
      chunk_size: config.tieredStorage.cache.chunkBytes,
      // The loop's nice value as the run had it: the configured one, or what the process kept when
      // it was not allowed to raise its priority (the server then warned).
      loop_thread_nice: getPriority(0),
      quick,
      cluster: clustered,
    },
    piece_ms: round(pieceMs),
    copy_mb_s: round(copyMbS, 1),
    copy_buffered_mb_s: round(copyBufferedMbS, 1),
    copy_direct_mb_s: round(copyDirectMbS, 1),
    phases: results,
    targets: targets(results, pieceMs, copyMbS),
  };
  printTable(report.phases, report.targets, pieceMs, copyMbS);
  if (args.json) Deno.writeTextFileSync(args.json, JSON.stringify(report, null, 2) + "\n");
  if (args.svg) {
    Deno.writeTextFileSync(
      args.svg,
      latenessChartSvg(series, `Tick lateness per phase (${machine.cpus} × ${machine.cpu}, ${args.backend})`),
    );
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  exitCode = 1;
} finally {
  await kafka?.close();
  await server.close();
  await peers?.stop();
  if (ownsDir) rmSync(dir, { recursive: true, force: true });
}
Deno.exit(exitCode);

interface Target {
  name: string;
  value: number;
  limit: number;
  met: boolean;
}

/**
 * The benchmark's targets (docs/BENCHMARKS.md, "Targets"), each a ratio within this run; absent
 * phases leave their targets out.
 */
function targets(r: Partial<Record<PhaseName, PhaseResult>>, pieceMs: number, copyMbS: number): Target[] {
  const out: Target[] = [];
  const add = (name: string, value: number, limit: number, atMost: boolean) =>
    out.push({
      name,
      value: round(value),
      limit: round(limit),
      met: atMost ? value <= limit : value >= limit,
    });
  const { idle, produce, upload, storm, whole } = r;
  if (idle && storm) {
    add("storm p99 <= idle p99 + 2 ms", storm.tick_lateness_ms.p99, idle.tick_lateness_ms.p99 + 2, true);
    add(
      "storm max <= idle max + 2 x piece_ms",
      storm.tick_lateness_ms.max,
      idle.tick_lateness_ms.max + 2 * pieceMs,
      true,
    );
    add("storm rss <= idle rss + 64 MB", storm.rss_mb, idle.rss_mb + 64, true);
  }
  if (upload) add("upload MB/s >= 0.7 x copy_mb_s", upload.upload_mb_s, 0.7 * copyMbS, false);
  if (produce && upload) {
    add(
      "upload produce p99 <= 1.2 x produce p99",
      upload.produce_latency_ms.p99,
      1.2 * produce.produce_latency_ms.p99,
      true,
    );
  }
  if (storm && whole) {
    add("whole max >= 20 x storm max", whole.tick_lateness_ms.max, 20 * storm.tick_lateness_ms.max, false);
  }
  return out;
}

function printTable(
  r: Partial<Record<PhaseName, PhaseResult>>,
  t: Target[],
  pieceMs: number,
  copyMbS: number,
): void {
  const cols = [
    "phase",
    "p50",
    "p99",
    "p99.9",
    "max",
    "missed",
    "upload MB/s",
    "produce p99",
    "poll p99",
    "RSS MB",
    "loop wait ms/s",
    "full GCs",
    "full GC max",
  ];
  const rows = Object.entries(r).map(([name, p]) =>
    [
      name,
      p!.tick_lateness_ms.p50,
      p!.tick_lateness_ms.p99,
      p!.tick_lateness_ms.p999,
      p!.tick_lateness_ms.max,
      p!.missed_ticks,
      p!.upload_mb_s,
      p!.produce_latency_ms.p99,
      p!.cold_poll_ms.p99,
      p!.rss_mb,
      p!.loop_wait_ms_per_s ?? "n/a",
      p!.full_gcs,
      p!.full_gc_pause_ms_max ?? "-",
    ].map(String)
  );
  const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)).join("  ");
  console.log(`tick lateness in ms; piece_ms ${pieceMs.toFixed(3)}; copy_mb_s ${copyMbS.toFixed(0)}`);
  console.log(line(cols));
  for (const row of rows) console.log(line(row));
  for (const target of t) {
    console.log(
      `${target.met ? "MET   " : "MISSED"} ${target.name}: ${target.value} (limit ${target.limit})`,
    );
  }
}
