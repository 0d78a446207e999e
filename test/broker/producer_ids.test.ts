import t from "tap";
import { producerIdMax, ProducerIds, ProducerIdsExhaustedError } from "../../src/broker/producer_ids.ts";
import { MemoryMetadataStore } from "../helpers/memory_metadata_store.ts";

t.test("ids come in blocks from the metadata, one commit a block, and callers share a block's commit", async (t) => {
  const store = new MemoryMetadataStore();
  await store.load();
  const ids = new ProducerIds(store, 4);
  const first = await Promise.all(Array.from({ length: 6 }, () => ids.next()));
  t.same([...first].sort((a, b) => a - b), [0, 1, 2, 3, 4, 5]);
  t.equal(store.commits, 2, "two blocks of four for six ids");
  t.equal(store.doc.nextProducerId, 8);
});

t.test("two nodes on one metadata never give the same id, and a restart skips the rest of its block", async (t) => {
  const store = new MemoryMetadataStore();
  await store.load();
  const a = new ProducerIds(store, 10);
  const b = new ProducerIds(store, 10);
  const given = [await a.next(), await b.next(), await a.next(), await b.next()];
  t.same(given, [0, 10, 1, 11]);
  const restarted = new ProducerIds(store, 10);
  t.equal(await restarted.next(), 20);
  store.concurrentChange = (doc) => {
    doc.nextProducerId = (doc.nextProducerId ?? 0) + 100;
  };
  t.equal(
    await new ProducerIds(store, 10).next(),
    130,
    "a commit that met another writer's takes the block after it",
  );
});

t.test("a failed commit fails the callers waiting on it; the next call takes a block again", async (t) => {
  const store = new MemoryMetadataStore();
  await store.load();
  const ids = new ProducerIds(store, 10);
  store.failNextCommit = new Error("etcd is away");
  await t.rejects(Promise.all([ids.next(), ids.next()]), /etcd is away/);
  t.equal(await ids.next(), 0);
  const full = new MemoryMetadataStore({
    version: 2,
    clusterId: "c",
    nextStreamId: 1,
    streams: [],
    nextProducerId: producerIdMax - 5,
  });
  await full.load();
  await t.rejects(new ProducerIds(full, 10).next(), ProducerIdsExhaustedError);
});
