import t from "tap";
import { SimObjectStore } from "../../../src/objectstore/sim_object_store.ts";
import { FormatVersionError } from "../../../src/runtime/format_version_error.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { VirtualClock } from "../../../src/runtime/clock/virtual_clock.ts";
import { checkBucketFormat } from "../../../src/tier/bucket/bucket_format.ts";

async function storeWith(objects: Record<string, Record<string, string>>) {
  const store = new SimObjectStore(new VirtualClock(), new Rng(1));
  for (const [key, metadata] of Object.entries(objects)) {
    const body = new Uint8Array(8);
    await store.put(key, async function* () {
      yield body;
    }, { sizeBytes: body.length, metadata, ifAbsent: true });
  }
  return store;
}

const log = "strata/c1/1/1/0/00000000000000aa-0/00000000000000000000.log";

t.test("a bucket of another format version is refused at boot, naming the versions", async (t) => {
  const old = await storeWith({ [log]: { "format-version": "1" } });
  const error = await checkBucketFormat(old, "strata", "c1").catch((e) => e);
  t.ok(error instanceof FormatVersionError);
  t.match(
    error.message,
    /objects under strata\/c1\/ .* format version 1, this server reads format version 2/,
  );
  const unlabelled = await storeWith({ [log]: {} });
  t.match(
    (await checkBucketFormat(unlabelled, "strata", "c1").catch((e) => e)).message,
    /format version undefined/,
  );
});

t.test("a bucket of this format, an empty one and another cluster's objects pass", async (t) => {
  await checkBucketFormat(await storeWith({ [log]: { "format-version": "2" } }), "strata", "c1");
  await checkBucketFormat(await storeWith({}), "strata", "c1");
  await checkBucketFormat(
    await storeWith({ [log.replace("/c1/", "/c2/")]: { "format-version": "1" } }),
    "strata",
    "c1",
  );
  t.pass("no refusal");
});

t.test("the check pages through keys that are not segments to the first .log, and stops at the bound", async (t) => {
  const others = Object.fromEntries(
    Array.from(
      { length: 40 },
      (_, i) => [`strata/c1/1/1/0/00000000000000aa-0/meta/${String(i).padStart(3, "0")}`, {}],
    ),
  );
  const later = log.replace("/0/00000000000000aa-0/", "/1/00000000000000bb-0/");
  const store = await storeWith({ ...others, [later]: { "format-version": "1" } });
  let lists = 0;
  const list = store.list.bind(store);
  store.list = (prefix, options) => (lists++, list(prefix, options));
  await t.rejects(
    checkBucketFormat(store, "strata", "c1"),
    FormatVersionError,
    "the .log after 40 other keys is found",
  );
  t.equal(lists, 3, "in pages of 16");
  const beyond = await storeWith(
    Object.fromEntries(
      Array.from({ length: 1020 }, (_, i) => [`strata/c1/a/${String(i).padStart(4, "0")}`, {}]),
    ),
  );
  let beyondLists = 0;
  const beyondList = beyond.list.bind(beyond);
  beyond.list = (prefix, options) => (beyondLists++, beyondList(prefix, options));
  await checkBucketFormat(beyond, "strata", "c1");
  t.equal(beyondLists, Math.ceil(1000 / 16), "no more than 1,000 keys are listed");
});
