import t from "tap";
import { bucketRoute, BucketRouter, otherBucketsMax } from "../../src/objectstore/bucket_router.ts";
import type { DeadlineObjectStore } from "../../src/objectstore/retrying_object_store.ts";
import { MalformedError } from "../../src/objectstore/object_store_errors.ts";
import { SimObjectStore } from "../../src/objectstore/sim_object_store.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";

// Keys under `~bucket/{name}/` read another bucket of the same service; every other key is the
// server's own bucket's, untouched; another bucket is never written.

const clock = new VirtualClock();
const body = (bytes: Uint8Array) => ({
  body: async function* () {
    yield bytes;
  },
  options: { sizeBytes: bytes.length, metadata: {}, ifAbsent: false },
});

async function put(store: DeadlineObjectStore, key: string, bytes: Uint8Array) {
  const { body: b, options } = body(bytes);
  await store.put(key, b, options);
}

t.test("routed keys read the other bucket; listings keep the route in their keys", async (t) => {
  const own = new SimObjectStore(clock, new Rng(1));
  const origin = new SimObjectStore(clock, new Rng(2));
  const opened: string[] = [];
  const router = new BucketRouter(own, (bucket) => {
    opened.push(bucket);
    return origin;
  });
  await put(own, "strata/a/1", new Uint8Array([1]));
  await put(origin, "strata/b/1", new Uint8Array([2, 2]));
  await put(origin, "strata/b/2", new Uint8Array([3]));
  const route = bucketRoute("origin-bucket");
  t.equal(route, "~bucket/origin-bucket/");
  t.same(await router.getRange("strata/a/1", 0, 1), [new Uint8Array([1])], "the own bucket's key as it is");
  t.same(await router.getRange(`${route}strata/b/1`, 0, 2), [new Uint8Array([2, 2])]);
  t.equal((await router.head(`${route}strata/b/2`))?.sizeBytes, 1);
  const first = await router.list(`${route}strata/b/`, { maxKeys: 1 });
  t.same(first.objects.map((o) => o.key), [`${route}strata/b/1`]);
  t.equal(first.nextStartAfter, `${route}strata/b/1`);
  const second = await router.list(`${route}strata/b/`, { startAfter: first.nextStartAfter! });
  t.same(second.objects.map((o) => o.key), [`${route}strata/b/2`], "a listing continues in its bucket");
  t.same((await router.list("strata/")).objects.map((o) => o.key), ["strata/a/1"]);
  await router.head(`${route}x`);
  t.same(opened, ["origin-bucket"], "each other bucket is opened once, on first use");
  t.ok(router.readsOtherBuckets);
});

t.test("another bucket is never written, a bad name is refused, and their number is bounded", async (t) => {
  const own = new SimObjectStore(clock, new Rng(1));
  const router = new BucketRouter(own, () => new SimObjectStore(clock, new Rng(2)));
  const { body: b, options } = body(new Uint8Array([1]));
  await t.rejects(router.put(`${bucketRoute("origin")}k`, b, options), MalformedError);
  await t.rejects(router.delete(["strata/ok", `${bucketRoute("origin")}k`]), /another bucket is only read/);
  await t.rejects(router.head("~bucket/Not_A_Bucket/k"), /not a bucket name/);
  for (let i = 0; i < otherBucketsMax; i++) await router.head(`${bucketRoute(`bucket-${i}`)}k`);
  await t.rejects(
    router.head(`${bucketRoute("one-more")}k`),
    new RegExp(`${otherBucketsMax} other buckets are open`),
  );
  const fsLike = new BucketRouter(own, null);
  t.notOk(fsLike.readsOtherBuckets);
  await t.rejects(fsLike.head(`${bucketRoute("origin")}k`), /the fs backend has no other buckets/);
});
