import t from "tap";
import { RemoteSegmentRetiredError } from "../../../src/log/remote/remote_reader.ts";
import { RemoteWalk } from "../../../src/log/remote/remote_walk.ts";
import { type ReadResult, readRetrying, readSegments } from "../../../src/log/read/segment_reads.ts";
import { DiskError } from "../../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../../src/runtime/disk/node_disk.ts";
import { chainConfig, filledChain } from "../../helpers/chain_fixture.ts";

const result: ReadResult = { messages: [], nextOffset: 7, release: () => {} };
const vanished = () => new DiskError("not_found", "open", "/x.log");

t.test("a read whose segment vanished under it starts again", async (t) => {
  let attempts = 0;
  const read = () => ++attempts < 3 ? Promise.reject(vanished()) : Promise.resolve(result);
  t.equal(await readRetrying(read, () => Promise.resolve()), result);
  t.equal(attempts, 3);
});

t.test("a retired remote segment is retired from the chain, then the read starts again", async (t) => {
  const retired: number[] = [];
  let attempts = 0;
  const read = () =>
    ++attempts === 1 ? Promise.reject(new RemoteSegmentRetiredError("t", 0, 500)) : Promise.resolve(result);
  t.equal(
    await readRetrying(read, (w) => {
      retired.push(w);
      return Promise.resolve();
    }),
    result,
  );
  t.same(retired, [500]);
});

t.test("other errors fail the read at once; the attempts are bounded", async (t) => {
  let attempts = 0;
  await t.rejects(
    readRetrying(() => (attempts++, Promise.reject(new Error("EIO"))), () => Promise.resolve()),
    /EIO/,
  );
  t.equal(attempts, 1);
  attempts = 0;
  await t.rejects(
    readRetrying(() => (attempts++, Promise.reject(vanished())), () => Promise.resolve()),
    DiskError,
  );
  t.equal(attempts, 64, "four retention passes' worth of segments");
});

t.test("a read spans segments, clamps below the first offset, and sees only published bytes", async (t) => {
  const { chain, dir } = await filledChain(t, 10);
  const context = { disk: new NodeDisk(), label: "t", remote: new RemoteWalk("t") };
  const all = await readSegments(context, chain.segments, 0, 100, 1 << 20);
  t.same(all.messages.map((m) => m.payload![0]), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.equal(all.nextOffset, 10);
  await chain.append(
    {
      kind: "messages",
      messages: [{ key: null, headers: {}, payload: new Uint8Array(1) }],
      stampAppendTime: false,
    },
    chainConfig,
  );
  await chain.flushPending();
  const unpublished = await readSegments(context, chain.segments, 9, 100, 1 << 20);
  t.same(unpublished.messages.map((m) => m.offset), [9], "the appended batch is not visible yet");
  chain.shiftFront();
  const clamped = await readSegments(context, chain.segments, 0, 1, 1 << 20);
  t.equal(clamped.messages[0]!.offset, 4, "below the first retained offset, the read starts at it");
  const budget = await readSegments(context, chain.segments, 4, 100, 1200);
  t.equal(budget.messages.length, 2, "two 500-byte payloads fit in 1200 bytes");
  t.ok(dir.length > 0);
});
