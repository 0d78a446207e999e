import type { Test } from "tap";
import type { ObjectStore } from "../../src/objectstore/object_store.ts";
import {
  CorruptError,
  MalformedError,
  NotFoundError,
  NotModifiedError,
  PreconditionFailedError,
} from "../../src/objectstore/object_store_errors.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { crc32 } from "../../src/runtime/checksum/crc32.ts";

/** A body of `bytes` split into pieces of `pieceBytes`, regenerated on every call. */
export function bodyOf(bytes: Uint8Array, pieceBytes = 256 * 1024) {
  return async function* () {
    for (let at = 0; at < bytes.length; at += pieceBytes) yield bytes.subarray(at, at + pieceBytes);
  };
}

/**
 * A body that reads every piece into one buffer, as the uploader does: a piece is the store's only
 * until it pulls the next one. After each pull the previous piece's bytes are overwritten with
 * garbage first, so a store that kept a piece without copying it stores garbage.
 */
export function reusedBufferBodyOf(bytes: Uint8Array, pieceBytes = 256 * 1024) {
  return async function* () {
    const buffer = new Uint8Array(pieceBytes);
    for (let at = 0; at < bytes.length; at += pieceBytes) {
      buffer.fill(0xee);
      const piece = bytes.subarray(at, at + pieceBytes);
      buffer.set(piece);
      yield buffer.subarray(0, piece.length);
    }
    buffer.fill(0xee);
  };
}

export function patterned(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

export const concat = (pieces: Uint8Array[]) => new Uint8Array(Buffer.concat(pieces));

async function errorOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
    return null;
  } catch (error) {
    return error;
  }
}

export interface ContractOptions {
  /** Whether `ifAbsent` is exact against a concurrent writer, or the HEAD-then-PUT fallback. */
  exactIfAbsent: boolean;
  /** False for s3rver, which commits even an aborted upload as an empty object. */
  abortedPutLeavesNothing?: boolean;
  /** Keys and page size of the pagination case: 1050 keys in pages of 1000 unless a store cannot list that many. */
  listing?: { keys: number; pageKeys: number; why?: string };
  /**
   * s3rver deletes a batch's keys in parallel and removes a directory once it empties, racing its
   * own scans; a sentinel key keeps the directory during the batch delete and is deleted after.
   */
  sentinelDuringDelete?: boolean;
  /** The store's wall clock, for LastModified; `Date.now` unless the store runs on a virtual clock. */
  wallMs?: () => number;
  /**
   * Why a store does not list keys of several levels in S3's order (UTF-8 byte order of the whole
   * key), when it does not: the case then checks only that every key is listed.
   */
  nestedOrderDiffers?: string;
}

/**
 * The one contract every backend passes. `prefix` isolates this run's keys in a shared bucket.
 */
export function objectStoreContract(t: Test, store: ObjectStore, prefix: string, options: ContractOptions) {
  t.test("put, get, range and head round-trip bytes and metadata", async (t) => {
    await initCrc32c();
    const bytes = patterned(3_500_000, 1);
    const key = `${prefix}/rt/00000000000000000042.log`;
    const put = await store.put(key, bodyOf(bytes), {
      sizeBytes: bytes.length,
      metadata: { "end-offset": "99", "crc32": String(crc32(bytes)) },
      ifAbsent: false,
      crc32: crc32(bytes),
    });
    t.ok(put.etag.length > 0, "an etag");
    const whole = await store.getRange(key, 0, bytes.length);
    t.ok(whole.every((p) => p.length <= 1024 * 1024), "pieces of at most 1 MiB");
    t.ok(Buffer.compare(concat(whole), bytes) === 0, "whole object byte for byte");
    const middle = concat(await store.getRange(key, 1_000_000, 1_000_100));
    t.ok(Buffer.compare(middle, bytes.subarray(1_000_000, 1_000_100)) === 0, "a middle range");
    const tail = concat(await store.getRange(key, bytes.length - 10, bytes.length + 100));
    t.ok(Buffer.compare(tail, bytes.subarray(bytes.length - 10)) === 0, "a range past the end is clamped");
    t.same(
      await store.getRange(key, bytes.length + 5, bytes.length + 10),
      [],
      "a range starting past the end is empty",
    );
    const head = await store.head(key);
    t.equal(head?.sizeBytes, bytes.length);
    t.same(
      head?.metadata,
      { "end-offset": "99", "crc32": String(crc32(bytes)) },
      "user metadata round trip",
    );
  });

  t.test("a listing names each object's ETag as head does; a GET if it changed reads only a changed object", async (t) => {
    await initCrc32c();
    const key = `${prefix}/etag/meta/manifest.bin`;
    const write = async (bytes: Uint8Array) => {
      const put = await store.put(key, bodyOf(bytes), {
        sizeBytes: bytes.length,
        metadata: {},
        ifAbsent: false,
      });
      return put.etag;
    };
    const first = patterned(3000, 11);
    await write(first);
    const listed = (await store.list(`${prefix}/etag/`)).objects;
    t.equal(listed.length, 1);
    const etag = listed[0]!.etag;
    t.ok(etag.length > 0, "the listing has an ETag");
    t.equal((await store.head(key))!.etag, etag, "head says the same");
    await t.rejects(
      store.getRange(key, 0, first.length, { ifNoneMatch: etag }),
      NotModifiedError,
      "unchanged: not modified, nothing read",
    );
    const second = patterned(3000, 12);
    await write(second);
    const changed = (await store.list(`${prefix}/etag/`)).objects[0]!.etag;
    t.not(changed, etag, "a write over it changes the listed ETag");
    const read = concat(await store.getRange(key, 0, second.length, { ifNoneMatch: etag }));
    t.ok(Buffer.compare(read, second) === 0, "changed: the new bytes");
    await store.delete([key]);
  });

  t.test("a body that reuses one buffer for every piece is stored as it was sent", async (t) => {
    await initCrc32c();
    const bytes = patterned(1_300_000, 5);
    const key = `${prefix}/reuse/00000000000000000007.log`;
    await store.put(key, reusedBufferBodyOf(bytes), {
      sizeBytes: bytes.length,
      metadata: {},
      ifAbsent: false,
      crc32: crc32(bytes),
    });
    const back = concat(await store.getRange(key, 0, bytes.length));
    t.ok(Buffer.compare(back, bytes) === 0, "byte for byte");
  });

  t.test("streamRange hands over the same bytes as getRange, one piece at a time, each at its position", async (t) => {
    await initCrc32c();
    const bytes = patterned(2_700_000, 9);
    const key = `${prefix}/stream/00000000000000000009.log`;
    await store.put(key, bodyOf(bytes), { sizeBytes: bytes.length, metadata: {}, ifAbsent: false });
    const streamed = async (start: number, end: number) => {
      const out = new Uint8Array(Math.max(0, Math.min(end, bytes.length) - start));
      let inSink = false;
      let overlapped = false;
      let expected = 0;
      let ordered = true;
      let largest = 0;
      const count = await store.streamRange(key, start, end, async (piece, position) => {
        overlapped ||= inSink;
        inSink = true;
        ordered &&= position === expected;
        expected = position + piece.length;
        largest = Math.max(largest, piece.length);
        // The piece is ours only until this promise resolves: copy it, after a real yield.
        await new Promise((resolve) => setTimeout(resolve, 1));
        out.set(piece, position);
        inSink = false;
      });
      return { out, count, overlapped, ordered, largest };
    };
    const whole = await streamed(0, bytes.length);
    t.equal(whole.count, bytes.length, "the byte count");
    t.ok(Buffer.compare(whole.out, bytes) === 0, "the whole object byte for byte");
    t.notOk(whole.overlapped, "never two pieces in the sink at once");
    t.ok(whole.ordered, "pieces in order, each at its position");
    t.ok(whole.largest <= 1024 * 1024, "pieces of at most 1 MiB");
    const middle = await streamed(1_000_000, 2_100_000);
    t.ok(Buffer.compare(middle.out, bytes.subarray(1_000_000, 2_100_000)) === 0, "a middle range");
    const tail = await streamed(bytes.length - 10, bytes.length + 100);
    t.equal(tail.count, 10, "a range past the end is clamped");
    t.equal((await streamed(bytes.length + 5, bytes.length + 10)).count, 0, "a range past the end is empty");
    const sinkFailure = new Error("disk full");
    const failed = await store.streamRange(key, 0, bytes.length, () => Promise.reject(sinkFailure)).catch((
      e,
    ) => e);
    t.equal(failed, sinkFailure, "the sink's own failure comes back as it is");
    const missing = await store.streamRange(`${prefix}/stream/none.log`, 0, 10, () => Promise.resolve())
      .catch((e) => e);
    t.ok(missing instanceof NotFoundError, "a missing object is NotFound");
  });

  t.test("absent objects: head is null, get is NotFound, delete is a success", async (t) => {
    const key = `${prefix}/missing/nothing.log`;
    t.equal(await store.head(key), null);
    t.ok((await errorOf(store.getRange(key, 0, 10))) instanceof NotFoundError);
    t.same(await store.delete([key]), [{ key, error: null }]);
  });

  t.test("keys that need encoding round-trip", async (t) => {
    const key = `${prefix}/odd/a b+c=d&e;f'g(h)ü.log`;
    await store.put(key, bodyOf(new Uint8Array([1, 2, 3])), { sizeBytes: 3, metadata: {}, ifAbsent: false });
    t.same([...concat(await store.getRange(key, 0, 3))], [1, 2, 3]);
    const listed = await store.list(`${prefix}/odd/`);
    t.same(listed.objects.map((o) => o.key), [key]);
    // The deletion grace is measured from LastModified: it must be a real time, within a day of now.
    const age = (options.wallMs ?? Date.now)() - listed.objects[0]!.lastModifiedMs;
    t.ok(Math.abs(age) < 86_400_000, `lastModifiedMs is a wall-clock time (age ${age} ms)`);
    t.same(await store.delete([key]), [{ key, error: null }]);
    t.equal(await store.head(key), null);
  });

  t.test("ifAbsent refuses a second create with PreconditionFailed and keeps the first object", async (t) => {
    const key = `${prefix}/cond/x.log`;
    const first = new Uint8Array([1]);
    await store.put(key, bodyOf(first), { sizeBytes: 1, metadata: { v: "1" }, ifAbsent: true });
    const error = await errorOf(
      store.put(key, bodyOf(new Uint8Array([2])), { sizeBytes: 1, metadata: { v: "2" }, ifAbsent: true }),
    );
    t.ok(
      error instanceof PreconditionFailedError,
      `the second create fails (${options.exactIfAbsent ? "exact" : "HEAD-then-PUT"})`,
    );
    t.same([...concat(await store.getRange(key, 0, 1))], [1], "the first object is intact");
    t.same((await store.head(key))?.metadata, { v: "1" });
    await store.put(key, bodyOf(new Uint8Array([3])), { sizeBytes: 1, metadata: {}, ifAbsent: false });
    t.same([...concat(await store.getRange(key, 0, 1))], [3], "without ifAbsent a put replaces");
  });

  t.test("a checksum mismatch is detected and nothing is stored", async (t) => {
    await initCrc32c();
    const key = `${prefix}/crc/bad.log`;
    const bytes = patterned(600_000, 2);
    const error = await errorOf(
      store.put(key, bodyOf(bytes), {
        sizeBytes: bytes.length,
        metadata: {},
        ifAbsent: false,
        crc32: crc32(bytes) ^ 1,
      }),
    );
    t.ok(error instanceof CorruptError, `Corrupt (${(error as Error)?.name})`);
    if (options.abortedPutLeavesNothing === false) {
      t.comment("this store commits aborted uploads; not checked here, and removed");
      await store.delete([key]);
    } else {
      t.equal(await store.head(key), null, "no object was created");
    }
  });

  t.test("a body that differs from its declared size is refused", async (t) => {
    const key = `${prefix}/size/bad.log`;
    const error = await errorOf(
      store.put(key, bodyOf(new Uint8Array(10)), { sizeBytes: 11, metadata: {}, ifAbsent: false }),
    );
    t.ok(
      error instanceof MalformedError || (error as Error)?.name === "TransportError",
      `refused (${(error as Error)?.name})`,
    );
    if (options.abortedPutLeavesNothing === false) {
      t.comment("this store commits aborted uploads as empty objects; not checked here, and removed");
      await store.delete([key]);
    } else {
      t.equal(await store.head(key), null, "nothing was stored");
    }
  });

  t.test("list orders keys across levels as strings sort ('a-b' before 'a/x'), and pages on from any key", async (t) => {
    const dir = `${prefix}/nested/`;
    const keys = [`${dir}a-b`, `${dir}a/x`, `${dir}a/y/z`, `${dir}a0`, `${dir}b/c`].sort();
    for (const k of [...keys].reverse()) {
      await store.put(k, bodyOf(new Uint8Array([3])), { sizeBytes: 1, metadata: {}, ifAbsent: false });
    }
    const listed = (await store.list(dir)).objects.map((o) => o.key);
    if (options.nestedOrderDiffers !== undefined) {
      t.comment(options.nestedOrderDiffers);
      t.same([...listed].sort(), keys, "every key");
      // One key a batch: s3rver removes an emptied directory while its own batch still works in it.
      for (const key of keys) await store.delete([key]);
      return;
    }
    t.same(listed, keys);
    const pages: string[] = [];
    let next: string | null = "";
    for (let page = 0; next !== null && page < keys.length + 1; page++) {
      const listed = await store.list(dir, { maxKeys: 2, ...(next === "" ? {} : { startAfter: next }) });
      pages.push(listed.objects.map((o) => o.key.slice(dir.length)).join(","));
      next = listed.nextStartAfter;
    }
    t.same(pages, ["a-b,a/x", "a/y/z,a0", "b/c"]);
    t.same((await store.list(`${dir}a/`)).objects.map((o) => o.key), [`${dir}a/x`, `${dir}a/y/z`]);
    t.same((await store.list(dir, { startAfter: `${dir}a/x` })).objects.map((o) => o.key), keys.slice(2));
    await store.delete(keys);
  });

  const listing = options.listing ?? { keys: 1050, pageKeys: 1000 };
  t.test(`list paginates ${listing.keys} keys in pages of ${listing.pageKeys}, in key order; batch delete removes them all`, async (t) => {
    if (listing.why) t.comment(listing.why);
    const dir = `${prefix}/many/`;
    const keys = Array.from({ length: listing.keys }, (_, i) => `${dir}${String(i).padStart(20, "0")}.log`);
    for (let at = 0; at < keys.length; at += 25) {
      await Promise.all(
        keys.slice(at, at + 25).map((k) =>
          store.put(k, bodyOf(new Uint8Array([7])), { sizeBytes: 1, metadata: {}, ifAbsent: false })
        ),
      );
    }
    const pageOptions = listing.pageKeys === 1000 ? {} : { maxKeys: listing.pageKeys };
    const first = await store.list(dir, pageOptions);
    t.equal(first.objects.length, listing.pageKeys, `a page holds ${listing.pageKeys} keys`);
    t.equal(first.nextStartAfter, keys[listing.pageKeys - 1]);
    const all = [...first.objects];
    let next = first.nextStartAfter;
    for (let page = 0; next !== null && page < 100; page++) {
      const more = await store.list(dir, { ...pageOptions, startAfter: next });
      all.push(...more.objects);
      next = more.nextStartAfter;
    }
    t.equal(next, null, "the last page says so");
    t.same(all.map((o) => o.key), keys, "every key, sorted");
    t.ok(all.every((o) => o.sizeBytes === 1));
    const small = await store.list(dir, { maxKeys: 10, startAfter: keys[5] });
    t.same(small.objects.map((o) => o.key), keys.slice(6, 16));
    const sentinel = `${dir}~sentinel`;
    if (options.sentinelDuringDelete) {
      await store.put(sentinel, bodyOf(new Uint8Array([1])), { sizeBytes: 1, metadata: {}, ifAbsent: false });
    }
    const results = await store.delete(keys);
    if (options.sentinelDuringDelete) await store.delete([sentinel]);
    t.equal(results.length, listing.keys);
    t.same(results.filter((r) => r.error !== null), [], "every key deleted");
    t.same((await store.list(dir)).objects, [], "nothing left");
  });
}
