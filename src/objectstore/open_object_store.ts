import type { TieredStorageConfig } from "../config/config.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Disk } from "../runtime/disk/disk.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Registry } from "../runtime/metrics/metrics.ts";
import type { Rng } from "../runtime/rng.ts";
import { FsObjectStore } from "./fs_object_store.ts";
import type { ObjectStore } from "./object_store.ts";
import { ObjectStoreError, TransportError } from "./object_store_errors.ts";
import { ObjectStoreMetrics } from "./object_store_metrics.ts";
import {
  ObjectStoreProbeError,
  probeObjectStore,
  type ProbeResult,
  type ProbeTarget,
} from "./probe_object_store.ts";
import { RetryingObjectStore } from "./retrying_object_store.ts";
import { S3ObjectStore } from "./s3/s3_object_store.ts";
import { BucketRouter } from "./bucket_router.ts";
import type { S3Settings } from "./s3/s3_settings.ts";

export interface OpenedObjectStore {
  /**
   * The store the tier service uses: retries, deadlines and metrics around the backend; keys under
   * `bucketRoute(name)` read other buckets of the same service (s3 only).
   */
  store: BucketRouter;
  /** What was opened, for the start-up log (never credentials). */
  description: Record<string, unknown>;
  close(): Promise<void>;
}

export interface OpenDeps {
  disk: Disk;
  clock: Clock;
  rng: Rng;
  registry: Registry;
  logger: Logger;
}

/** Builds the configured backend, probes it, and wraps it; throws `ObjectStoreProbeError` when it cannot be used. */
export async function openObjectStore(
  config: TieredStorageConfig,
  deps: OpenDeps,
): Promise<OpenedObjectStore> {
  const opened = config.backend === "fs" ? await openFs(config, deps) : await openS3(config, deps);
  const timeouts = {
    putMs: config.segmentUploadTimeoutMs,
    getMs: config.fetchTimeoutMs,
    otherMs: config.requestTimeoutMs,
  };
  const own = new RetryingObjectStore(
    opened.backend,
    deps.clock,
    deps.rng,
    config.retry,
    timeouts,
    new ObjectStoreMetrics(deps.registry),
  );
  // Other buckets are read only by read replicas; their requests are not in the own store's metrics.
  const others: S3ObjectStore[] = [];
  const openOther = opened.openOther;
  const store = new BucketRouter(
    own,
    openOther === null ? null : (bucket) => {
      const backend = openOther(bucket);
      others.push(backend);
      deps.logger.info("object store ready", { ...opened.description, bucket, read_only: true });
      return new RetryingObjectStore(backend, deps.clock, deps.rng, config.retry, timeouts, null);
    },
  );
  deps.logger.info("object store ready", opened.description);
  const close = async () => {
    for (const other of others) await other.close();
    await opened.close();
  };
  return { store, description: opened.description, close };
}

async function openFs(config: TieredStorageConfig, deps: OpenDeps) {
  await deps.disk.mkdirp(config.fs.path);
  const backend = new FsObjectStore(deps.disk, config.fs.path, deps.rng);
  const probe = await probeAnswering(deps, backend, config.s3.prefix, {
    endpoint: config.fs.path,
    bucket: "(directory)",
  });
  return {
    backend: backend as ObjectStore,
    description: { backend: "fs", path: config.fs.path, conditional_create: probe.conditionalCreateHonoured },
    openOther: null,
    close: () => Promise.resolve(),
  };
}

async function openS3(config: TieredStorageConfig, deps: OpenDeps) {
  const s3 = config.s3;
  const endpoint = s3.endpoint !== ""
    ? s3.endpoint.replace(/\/$/, "")
    : `https://s3.${s3.region}.amazonaws.com`;
  const styles: ("path" | "virtual")[] = s3.urlStyle !== "auto"
    ? [s3.urlStyle]
    : isLocalHost(new URL(endpoint).hostname)
    ? ["path"]
    : ["virtual", "path"];
  const settings = (urlStyle: "path" | "virtual", conditionalWrites: boolean): S3Settings => ({
    endpoint,
    region: s3.region,
    bucket: s3.bucket,
    accessKeyId: s3.accessKey,
    secretAccessKey: s3.secretKey,
    ...(s3.sessionToken !== "" ? { sessionToken: s3.sessionToken } : {}),
    urlStyle,
    conditionalWrites,
    connectionIdleTimeoutMs: config.connectionIdleTimeoutMs,
    connectionsMax: s3.connectionsMax,
    requestTimeoutMs: config.requestTimeoutMs,
  });
  let lastError: unknown = null;
  for (const style of styles) {
    // The probe always sends If-None-Match, to learn whether the store honours it.
    const probing = new S3ObjectStore(settings(style, true), deps.clock);
    try {
      const probe = await probeAnswering(deps, probing, s3.prefix, { endpoint, bucket: s3.bucket });
      await probing.close();
      const conditional = s3.conditionalWrites && probe.conditionalCreateHonoured;
      const backend = new S3ObjectStore(settings(style, conditional), deps.clock);
      return {
        backend: backend as ObjectStore,
        description: {
          backend: "s3",
          endpoint,
          bucket: s3.bucket,
          region: s3.region,
          url_style: style,
          conditional_create: probe.conditionalCreateHonoured,
          conditional_writes: conditional,
        },
        // Another bucket of the same service, only read: no probe, no conditional writes.
        openOther: (bucket: string) => new S3ObjectStore({ ...settings(style, false), bucket }, deps.clock),
        close: () => backend.close(),
      };
    } catch (error) {
      await probing.close();
      lastError = error;
      // Virtual-host style needs DNS for {bucket}.{host}; when it is unreachable, try path style.
      const unreachable = error instanceof ObjectStoreProbeError && /is unreachable/.test(error.message);
      if (!unreachable) throw error;
    }
  }
  throw lastError instanceof Error
    ? lastError
    : new TransportError(String(lastError), null, { cause: lastError });
}

/** Probes in all when the store answers with a server error or throttles (5xx): it may be restarting. */
const probeAttemptsMax = 3;
/** The wait before the second and the third probe. */
const probeRetryDelaysMs = [250, 1000];

/**
 * The boot probe, tried again while the store answers but fails (a 5xx or throttling: a store that
 * restarts or briefly fails is no misconfiguration). A refused connection, a missing bucket or
 * rejected credentials fail at once, naming what is wrong.
 */
export async function probeAnswering(
  deps: OpenDeps,
  store: ObjectStore,
  prefix: string,
  target: ProbeTarget,
): Promise<ProbeResult> {
  for (let attempt = 1;; attempt++) {
    try {
      return await probeObjectStore(store, prefix, target, deps.rng);
    } catch (error) {
      const cause = error instanceof ObjectStoreProbeError ? error.cause : error;
      const answered = cause instanceof ObjectStoreError && cause.errorClass === "retry" &&
        cause.status !== null;
      if (!answered || attempt >= probeAttemptsMax) throw error;
      deps.logger.warn("object store probe failed; trying again", {
        attempt,
        error,
      });
      await deps.clock.sleep(probeRetryDelaysMs[attempt - 1]!);
    }
  }
}

function isLocalHost(hostname: string): boolean {
  return hostname === "localhost" || /^[\d.]+$/.test(hostname) || hostname.startsWith("[");
}
