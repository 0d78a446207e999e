import type { Rng } from "../runtime/rng.ts";
import type { ObjectStore } from "./object_store.ts";
import {
  AuthError,
  PreconditionFailedError,
  TransportError,
  UnsupportedError,
} from "./object_store_errors.ts";

/** The store cannot be used; the message says whether the endpoint, the bucket or the credentials is wrong. */
export class ObjectStoreProbeError extends Error {
  override name = "ObjectStoreProbeError";
}

export interface ProbeTarget {
  /** How to name the store in messages, e.g. "http://127.0.0.1:7480" or a directory. */
  endpoint: string;
  bucket: string;
}

export interface ProbeResult {
  /** Whether a second create with If-None-Match: * was refused with 412. */
  conditionalCreateHonoured: boolean;
}

const probeBody = new TextEncoder().encode("strata object store probe");

/**
 * The boot probe: a one-key LIST (are the endpoint, bucket and credentials right?), then a write,
 * read and delete of a small object under `{prefix}/_probe/`, written twice with create-if-absent
 * to learn whether the store honours conditional create. Run against the raw backend, one
 * attempt per step, so a misconfiguration fails at boot rather than at the first upload (the
 * opener probes again, a few times, only a store that answered with a server error).
 */
export async function probeObjectStore(
  store: ObjectStore,
  prefix: string,
  target: ProbeTarget,
  rng: Rng,
): Promise<ProbeResult> {
  try {
    await store.list(`${prefix}/_probe/`, { maxKeys: 1 });
  } catch (error) {
    throw explain(error, target);
  }
  const key = `${prefix}/_probe/${rng.hex64()}`;
  const body = () =>
    (async function* () {
      yield probeBody;
    })();
  try {
    await store.put(key, body, { sizeBytes: probeBody.length, metadata: { probe: "1" }, ifAbsent: true });
    const read = Buffer.concat(await store.getRange(key, 0, probeBody.length));
    if (Buffer.compare(read, probeBody) !== 0) {
      throw new ObjectStoreProbeError(
        `Cannot use the object store at ${target.endpoint}: a probe object read back different bytes`,
      );
    }
    let honoured = false;
    try {
      await store.put(key, body, { sizeBytes: probeBody.length, metadata: { probe: "2" }, ifAbsent: true });
    } catch (error) {
      if (!(error instanceof PreconditionFailedError)) throw error;
      honoured = true;
    }
    return { conditionalCreateHonoured: honoured };
  } catch (error) {
    throw error instanceof ObjectStoreProbeError ? error : explain(error, target);
  } finally {
    // A probe object left behind (under _probe/) is harmless: no topic, restore or sweep reads it,
    // and the probe's own answer, already decided, is what start-up reports.
    await store.delete([key]).catch(() => {});
  }
}

/** The probe's failure in the operator's terms, keeping the store's error as its `cause`. */
function explain(error: unknown, target: ProbeTarget): ObjectStoreProbeError {
  return new ObjectStoreProbeError(explanation(error, target), { cause: error });
}

function explanation(error: unknown, target: ProbeTarget): string {
  const detail = error instanceof Error ? error.message.replace(/^Cannot [^:]*: /, "") : String(error);
  if (error instanceof AuthError) {
    return `Cannot use the object store: the credentials were rejected by ${target.endpoint} for bucket ${target.bucket} (${detail})`;
  }
  if (error instanceof UnsupportedError) {
    return `Cannot use the object store: bucket ${target.bucket} does not exist at ${target.endpoint} (${detail})`;
  }
  if (error instanceof TransportError) {
    return `Cannot use the object store: the endpoint ${target.endpoint} is unreachable (${detail})`;
  }
  return `Cannot use the object store at ${target.endpoint}: ${detail}`;
}
