import { assert } from "../runtime/assert.ts";
import type {
  DeadlineGetOptions,
  DeadlineListOptions,
  DeadlineObjectStore,
  DeadlineOptions,
  DeadlinePutOptions,
} from "./retrying_object_store.ts";
import type { BodySource, DeleteResult, ListPage, ObjectHead, PieceSink, PutResult } from "./object_store.ts";
import { MalformedError } from "./object_store_errors.ts";

/** Other buckets open at once at most: each is a store with its own connections. */
export const otherBucketsMax = 8;

const routePrefix = "~bucket/";
const bucketNamePattern = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** The key prefix that routes to bucket `bucket` (docs/DESIGN.md, "Read replicas"): `~bucket/{bucket}/`. */
export function bucketRoute(bucket: string): string {
  checkBucketName(bucket);
  return `${routePrefix}${bucket}/`;
}

/** An S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens), or a refusal naming it. */
export function checkBucketName(bucket: string): string {
  if (!bucketNamePattern.test(bucket)) {
    throw new MalformedError(`Cannot use bucket ${JSON.stringify(bucket.slice(0, 100))}: not a bucket name`);
  }
  return bucket;
}

/**
 * The store of the server's bucket, which also reads other buckets of the same service: a key that
 * starts with `bucketRoute(name)` is that bucket's key after it, read through a store `openBucket`
 * opens on first use (at most `otherBucketsMax`), with the same endpoint, credentials and retries.
 * Keys of other buckets are only read: a put or delete of one is refused. Every other key goes to
 * the server's own store untouched.
 */
export class BucketRouter implements DeadlineObjectStore {
  readonly #own: DeadlineObjectStore;
  readonly #openBucket: ((bucket: string) => DeadlineObjectStore) | null;
  readonly #others = new Map<string, DeadlineObjectStore>();

  /** `openBucket` null: the backend has no other buckets (a directory), and a routed key is refused. */
  constructor(own: DeadlineObjectStore, openBucket: ((bucket: string) => DeadlineObjectStore) | null) {
    this.#own = own;
    this.#openBucket = openBucket;
  }

  /** Whether keys of other buckets can be read at all. */
  get readsOtherBuckets(): boolean {
    return this.#openBucket !== null;
  }

  async put(key: string, body: BodySource, options: DeadlinePutOptions): Promise<PutResult> {
    this.#refuseWrite(key);
    return await this.#own.put(key, body, options);
  }

  async getRange(
    key: string,
    start: number,
    end: number,
    options?: DeadlineGetOptions,
  ): Promise<Uint8Array[]> {
    const [store, inner] = this.#route(key);
    return await store.getRange(inner, start, end, options);
  }

  async streamRange(
    key: string,
    start: number,
    end: number,
    onPiece: PieceSink,
    options?: DeadlineOptions,
  ): Promise<number> {
    const [store, inner] = this.#route(key);
    return await store.streamRange(inner, start, end, onPiece, options);
  }

  async head(key: string, options?: DeadlineOptions): Promise<ObjectHead | null> {
    const [store, inner] = this.#route(key);
    return await store.head(inner, options);
  }

  async list(prefix: string, options: DeadlineListOptions = {}): Promise<ListPage> {
    if (!prefix.startsWith(routePrefix)) return await this.#own.list(prefix, options);
    const [store, inner, route] = this.#route(prefix);
    const startAfter = options.startAfter;
    if (startAfter !== undefined) assert(startAfter.startsWith(route), "a listing continues in its bucket");
    const page = await store.list(inner, {
      ...options,
      ...(startAfter === undefined ? {} : { startAfter: startAfter.slice(route.length) }),
    });
    return {
      objects: page.objects.map((o) => ({ ...o, key: route + o.key })),
      nextStartAfter: page.nextStartAfter === null ? null : route + page.nextStartAfter,
    };
  }

  async delete(keys: readonly string[], options?: DeadlineOptions): Promise<DeleteResult[]> {
    for (const key of keys) this.#refuseWrite(key);
    return await this.#own.delete(keys, options);
  }

  #refuseWrite(key: string): void {
    if (key.startsWith(routePrefix)) {
      throw new MalformedError(`Cannot write ${key.slice(0, 200)}: another bucket is only read`);
    }
  }

  /** The store a key goes to, the key there, and the route it had. */
  #route(key: string): [DeadlineObjectStore, string, string] {
    if (!key.startsWith(routePrefix)) return [this.#own, key, ""];
    const bucket = key.slice(routePrefix.length).split("/")[0]!;
    const route = bucketRoute(bucket);
    if (this.#openBucket === null) {
      throw new MalformedError(`Cannot read bucket ${bucket}: the fs backend has no other buckets`);
    }
    let store = this.#others.get(bucket);
    if (store === undefined) {
      if (this.#others.size >= otherBucketsMax) {
        throw new MalformedError(`Cannot read bucket ${bucket}: ${otherBucketsMax} other buckets are open`);
      }
      store = this.#openBucket(bucket);
      this.#others.set(bucket, store);
    }
    return [store, key.slice(route.length), route];
  }
}
