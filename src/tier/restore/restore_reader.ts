import { NotFoundError, NotModifiedError } from "../../objectstore/object_store_errors.ts";
import { isBug } from "../../runtime/assert.ts";
import { FormatVersionError } from "../../runtime/format_version_error.ts";
import type { PartitionSeed } from "../../log/partition/seeded_partition.ts";
import type { GetOptions, ListedObject, ObjectStore } from "../../objectstore/object_store.ts";
import { concatBytes } from "../../runtime/memory/buffers.ts";
import { concurrently } from "../../runtime/cooperation/concurrently.ts";
import { readChainEpochs } from "./chain_epochs.ts";
import type { Logger } from "../../runtime/logger.ts";
import { producersAtEndOf } from "../bucket/producer_snapshot_object.ts";
import { decodeManifest, type PartitionManifest } from "../bucket/manifest.ts";
import { clusterRoot, manifestKey, parseObjectKey } from "../bucket/object_keys.ts";
import {
  chooseIncarnation,
  headsNeeded,
  type ListedIncarnation,
  type ListedSegment,
  type PartitionRestorePlan,
  planPartition,
  RestoreError,
} from "./restore_plan.ts";
import { decodeTopicManifest, type TopicManifest, topicManifestBytesMax } from "../bucket/topic_manifest.ts";
import { markerOfObject, StateTransferError, type TieredObject, tieredObjectOf } from "./transfer_chain.ts";

/** What reading a restore from the bucket needs of the store. */
export type RestoreStore = Pick<ObjectStore, "list" | "head" | "getRange">;

/** Listing pages one search reads at most (1000 keys each): a bound, never reached by a real bucket. */
const listingPagesMax = 100_000;
/** HEADs in flight at once while a partition's plan is read. */
const headsInFlightMax = 8;
/** Clusters one bucket prefix is searched for at most. */
const clustersMax = 1000;
/** Largest partition manifest read: 65,536 segments of about 100 bytes each, with room. */
const manifestBytesMax = 16 * 1024 * 1024;

/**
 * The clusters with objects under `prefix`: one listing request per cluster, skipping the rest of
 * each. Names starting with "_" are not clusters (the boot probe writes under `{prefix}/_probe/`).
 */
export async function listClusters(store: RestoreStore, prefix: string): Promise<string[]> {
  const clusters: string[] = [];
  let startAfter: string | undefined;
  for (let i = 0; i < clustersMax; i++) {
    const page = await store.list(`${prefix}/`, {
      maxKeys: 1,
      ...(startAfter === undefined ? {} : { startAfter }),
    });
    const key = page.objects[0]?.key;
    if (key === undefined) return clusters;
    const clusterId = key.slice(prefix.length + 1).split("/")[0]!;
    if (!clusterId.startsWith("_")) clusters.push(clusterId);
    // "~" sorts after every character of a key this layout writes below a cluster's root.
    startAfter = `${clusterRoot(prefix, clusterId)}~`;
  }
  throw new RestoreError(`more than ${clustersMax} clusters under ${prefix}/`);
}

/** Every object under `prefix`, page by page, in key order. */
export async function listAll(store: RestoreStore, prefix: string): Promise<ListedObject[]> {
  const objects: ListedObject[] = [];
  let startAfter: string | undefined;
  for (let page = 0; page < listingPagesMax; page++) {
    const listed = await store.list(prefix, startAfter === undefined ? {} : { startAfter });
    objects.push(...listed.objects);
    if (listed.nextStartAfter === null) return objects;
    startAfter = listed.nextStartAfter;
  }
  throw new RestoreError(`the listing of ${prefix} did not end within ${listingPagesMax} pages`);
}

/** Reads of one small object at most, when it changes under them (its writer puts it again). */
const smallReadAttemptsMax = 3;

/**
 * A small object of the listing (a manifest), decoded. Its writer puts it again as it changes, so it
 * may not be the size the listing said by the time it is read: a read that cannot be decoded, or
 * that asks past the object's end, is made again at the size a HEAD gives, `smallReadAttemptsMax`
 * times in all. The first read may be conditional (`ifNoneMatch`: `NotModifiedError` when the
 * object still has that ETag). An object gone meanwhile throws `NotFoundError`.
 */
export async function readSmall<T>(
  store: RestoreStore,
  listed: { key: string; sizeBytes: number },
  maxBytes: number,
  decode: (bytes: Uint8Array) => T,
  firstRead: GetOptions = {},
): Promise<T> {
  let sizeBytes = listed.sizeBytes;
  for (let attempt = 1;; attempt++) {
    if (sizeBytes > maxBytes) {
      throw new RestoreError(`object ${listed.key} is ${sizeBytes} bytes, more than ${maxBytes}`);
    }
    try {
      return decode(
        concatBytes(await store.getRange(listed.key, 0, sizeBytes, attempt === 1 ? firstRead : {})),
      );
    } catch (error) {
      const settled = error instanceof NotFoundError || error instanceof NotModifiedError ||
        error instanceof FormatVersionError;
      if (isBug(error) || settled) throw error;
      const head = await store.head(listed.key);
      if (head === null) {
        throw new NotFoundError(`Cannot read ${listed.key}: it is gone`, null, { cause: error });
      }
      if (attempt === smallReadAttemptsMax || head.sizeBytes === sizeBytes) throw error;
      sizeBytes = head.sizeBytes;
    }
  }
}

/**
 * The topic the bucket describes under `root` by these names: the topic manifest that names them,
 * the newest by creation time when a topic of that name was deleted and created again.
 */
export async function findTopicManifest(
  store: RestoreStore,
  root: string,
  streamName: string,
  topicName: string,
): Promise<TopicManifest> {
  const found: TopicManifest[] = [];
  for (const o of await listAll(store, `${root}meta/`)) {
    if (parseObjectKey(root, o.key).kind !== "topic_manifest") continue;
    const m = await readSmall(store, o, topicManifestBytesMax, decodeTopicManifest);
    if (m.streamName === streamName && m.topicName === topicName) found.push(m);
  }
  if (found.length === 0) {
    throw new RestoreError(`the bucket holds no topic manifest of ${streamName}/${topicName} under ${root}`);
  }
  return found.reduce((a, b) => (b.createdAtMs > a.createdAtMs ? b : a));
}

/**
 * One partition's plan, read from the bucket: the incarnations its keys show (dead marks
 * included), the chosen one's manifest when there is one, its listing, and HEADs of what the
 * manifest does not describe.
 */
export async function readPartitionPlan(
  store: RestoreStore,
  prefix: string,
  topic: TopicManifest,
  partitionId: number,
): Promise<PartitionRestorePlan> {
  const root = clusterRoot(prefix, topic.clusterId);
  const path = `${topic.streamId}/${topic.topicId}/${partitionId}/`;
  const label = `${topic.streamName}/${topic.topicName}/${partitionId}`;
  const [data, meta] = [await listAll(store, `${root}${path}`), await listAll(store, `${root}meta/${path}`)];
  const chosen = chooseIncarnation(label, incarnationsOf(root, [...data, ...meta]));
  const empty = { createdRevision: "", purgeGeneration: 0 };
  if (chosen === null) return planPartition(empty, null, [], new Map());
  const manifest = chosen.hasManifest
    ? await readManifest(store, prefix, topic, partitionId, chosen, meta)
    : null;
  const segments = segmentsOf(root, data, chosen);
  const needed = headsNeeded(manifest, segments);
  const heads = new Map<string, TieredObject>();
  await concurrently(needed.length, headsInFlightMax, async (i) => {
    const key = needed[i]!;
    const stem = segments.find((s) => s.logKey === key)!;
    try {
      heads.set(key, tieredObjectOf(key, stem, await store.head(key)));
    } catch (error) {
      // Reported by the plan: a segment whose object is gone or says nothing usable is left out,
      // with why. Any other failure (the store's) fails the restore, rather than leave data out.
      if (!(error instanceof NotFoundError || error instanceof StateTransferError)) throw error;
    }
  });
  return planPartition(chosen, manifest, segments, heads);
}

async function readManifest(
  store: RestoreStore,
  prefix: string,
  topic: TopicManifest,
  partitionId: number,
  chosen: ListedIncarnation,
  meta: readonly ListedObject[],
): Promise<PartitionManifest> {
  const key = manifestKey({
    prefix,
    clusterId: topic.clusterId,
    streamId: topic.streamId,
    topicId: topic.topicId,
    partitionId,
    ...chosen,
  });
  return await readSmall(store, meta.find((o) => o.key === key)!, manifestBytesMax, decodeManifest);
}

/** The incarnations a partition's keys show, each with whether it has a manifest and a dead mark. */
function incarnationsOf(root: string, objects: readonly ListedObject[]): ListedIncarnation[] {
  const found = new Map<string, ListedIncarnation>();
  for (const o of objects) {
    const key = parseObjectKey(root, o.key);
    if (key.kind !== "segment" && key.kind !== "manifest" && key.kind !== "dead_mark") continue;
    const id = `${key.createdRevision}-${key.purgeGeneration}`;
    const i = found.get(id) ??
      {
        createdRevision: key.createdRevision,
        purgeGeneration: key.purgeGeneration,
        dead: false,
        hasManifest: false,
      };
    if (key.kind === "dead_mark") i.dead = true;
    if (key.kind === "manifest") i.hasManifest = true;
    found.set(id, i);
  }
  return [...found.values()];
}

/** The chosen incarnation's segments, each with the keys of the objects it has. */
function segmentsOf(
  root: string,
  objects: readonly ListedObject[],
  chosen: ListedIncarnation,
): ListedSegment[] {
  const byStem = new Map<string, ListedSegment>();
  for (const o of objects) {
    const key = parseObjectKey(root, o.key);
    if (key.kind !== "segment") continue;
    if (key.createdRevision !== chosen.createdRevision || key.purgeGeneration !== chosen.purgeGeneration) {
      continue;
    }
    const stem = `${key.startOffset}-${key.mergedEndOffset}`;
    const { startOffset, mergedEndOffset } = key;
    const s = byStem.get(stem) ??
      { startOffset, mergedEndOffset, logKey: null, logSizeBytes: 0, indexKey: null };
    if (key.file === "log") {
      s.logKey = o.key;
      s.logSizeBytes = o.sizeBytes;
    } else if (key.file === "index") {
      s.indexKey = o.key;
    }
    byStem.set(stem, s);
  }
  return [...byStem.values()].sort((a, b) => a.startOffset - b.startOffset);
}

/**
 * The seed a restored partition starts from: the plan's segments as markers of the source's
 * incarnation (the partition takes its revision and generation), its leader epochs read from the
 * bucket, and where the source's objects end. Null for a plan without segments (an empty partition).
 */
export async function restoreSeedOf(
  store: RestoreStore,
  topic: TopicManifest,
  partitionId: number,
  plan: PartitionRestorePlan,
  logger: Logger,
): Promise<PartitionSeed | null> {
  if (plan.segments.length === 0) return null;
  const identity = { createdRevision: plan.createdRevision, purgeGeneration: plan.purgeGeneration };
  const last = plan.segments.at(-1)!;
  const producers = await producersAtEndOf(store, last.key, last.endOffset, (reason) => {
    logger.warn("restore: the producer snapshot is not usable; the partition starts without", {
      partition: partitionId,
      reason,
    });
  });
  return {
    producers,
    ...identity,
    tieredUpToOffset: plan.nextOffset,
    markers: plan.segments.map(({ source: _source, ...object }) => markerOfObject(object, identity)),
    epochs: await readChainEpochs(store, plan.segments),
    restoredFrom: {
      clusterId: topic.clusterId,
      streamId: topic.streamId,
      topicId: topic.topicId,
      partitionId,
      ...identity,
      belowOffset: plan.nextOffset,
    },
  };
}
