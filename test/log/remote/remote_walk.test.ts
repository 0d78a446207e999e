import t from "tap";
import { type BatchHeader, decodeMessages, encodeBatch } from "../../../src/log/batch/batch_codec.ts";
import { RemoteReadUnavailableError } from "../../../src/log/log_errors.ts";
import {
  type RemoteChunk,
  RemoteCorruptError,
  type RemoteReader,
} from "../../../src/log/remote/remote_reader.ts";
import {
  RemoteWalk,
  remoteWindowFirstBytes,
  remoteWindowMaxBytes,
} from "../../../src/log/remote/remote_walk.ts";
import { Segment } from "../../../src/log/segment/segment.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";

await initCrc32c();

/** A remote segment of `count` one-message batches of `payloadBytes` each, as one chunk. */
function remoteSegment(count: number, payloadBytes: number) {
  const batches = Array.from(
    { length: count },
    (_, i) =>
      encodeBatch(i, 1000 + i, [{
        key: null,
        headers: {},
        payload: new Uint8Array(payloadBytes).fill(i),
      }]),
  );
  const bytes = new Uint8Array(batches.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of batches) {
    bytes.set(b, at);
    at += b.length;
  }
  const segment = new Segment("/nowhere", 0);
  segment.sizeBytes = bytes.length;
  segment.endOffset = count - 1;
  segment.location = "remote";
  return { segment, bytes, batchBytes: batches[0]!.length };
}

/** A reader over `bytes` that notes what is asked of it; `corruptOnce` flips a byte in the first fetch covering it. */
function reader(bytes: Uint8Array, corrupt: { at: number; times: number } | null = null) {
  const asked: { position: number; wantBytes: number }[] = [];
  const dropped: number[] = [];
  const recycled: RemoteChunk[] = [];
  const remote: RemoteReader = {
    chunkAt: (_segment, position, wantBytes) => {
      asked.push({ position, wantBytes });
      const window = bytes.slice(position, Math.min(bytes.length, position + wantBytes));
      if (
        corrupt !== null && corrupt.times > 0 && corrupt.at >= position &&
        corrupt.at < position + window.length
      ) {
        corrupt.times--;
        window[corrupt.at - position]! ^= 0xff;
      }
      return Promise.resolve({ start: position, bytes: window, end: bytes.length, cacheKey: `c${position}` });
    },
    index: () => Promise.resolve(null),
    drop: (chunk) => {
      dropped.push(chunk.start);
      return Promise.resolve();
    },
    recycle: (chunk) => recycled.push(chunk),
  };
  return { remote, asked, dropped, recycled };
}

const first = { relativeOffset: 0, position: 0, timestampUs: 0 };

function collect() {
  const offsets: number[] = [];
  const visit = (batch: Uint8Array, _header: BatchHeader) => {
    for (const m of decodeMessages(batch)) offsets.push(m.offset);
    return true;
  };
  return { offsets, visit };
}

t.test("a walk visits every batch once, in order, with windows that start modest and double", async (t) => {
  const { segment, bytes } = remoteSegment(40, 4000);
  const { remote, asked, recycled } = reader(bytes);
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collect();
  const borrowed: RemoteChunk[] = [];
  await walk.walk(segment, first, () => 1 << 30, visit, borrowed);
  t.same(offsets, Array.from({ length: 40 }, (_, i) => i));
  t.equal(asked[0]!.wantBytes, remoteWindowFirstBytes);
  t.ok(asked.slice(1).every((a, i) => a.wantBytes === 2 * asked[i]!.wantBytes), "each window doubles");
  t.same(recycled, [], "windows the visitor saw are the read's until it releases them");
  t.equal(borrowed.length, asked.length);
});

t.test("windows hold at remoteWindowMaxBytes while batches fit; a fetch's walk starts there", async (t) => {
  const { segment, bytes } = remoteSegment(300, 10_000);
  for (const firstWindowBytes of [remoteWindowFirstBytes, remoteWindowMaxBytes]) {
    const { remote, asked } = reader(bytes);
    const walk = new RemoteWalk("t");
    walk.attach(remote);
    const { offsets, visit } = collect();
    await walk.walk(segment, first, () => 1 << 30, visit, null, firstWindowBytes);
    t.same(
      offsets,
      Array.from({ length: 300 }, (_, i) => i),
      `every batch, first window ${firstWindowBytes}`,
    );
    t.equal(asked[0]!.wantBytes, firstWindowBytes, "the first window as asked");
    t.ok(asked.every((a) => a.wantBytes <= remoteWindowMaxBytes), "no window past the bound");
    t.equal(asked.at(-1)!.wantBytes, remoteWindowMaxBytes, "the last at the bound");
  }
});

t.test("a window too small for one batch is asked again, larger, and goes back at once", async (t) => {
  const { segment, bytes, batchBytes } = remoteSegment(3, 100_000);
  const { remote, asked, recycled } = reader(bytes);
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collect();
  await walk.walk(segment, first, () => 1 << 30, visit, []);
  t.same(offsets, [0, 1, 2]);
  t.equal(asked[0]!.position, asked[1]!.position, "the same position again");
  t.ok(asked[1]!.wantBytes >= batchBytes);
  t.ok(recycled.length >= 1, "the short window went back");
});

t.test("a batch the visitor refuses by its header ends the walk before it is asked for whole", async (t) => {
  const { segment, bytes, batchBytes } = remoteSegment(5, 100_000);
  for (const refused of [0, 2]) {
    const { remote, asked } = reader(bytes);
    const walk = new RemoteWalk("t");
    walk.attach(remote);
    const { offsets, visit } = collect();
    const refusing = Object.assign(visit, {
      refuses: (header: BatchHeader) => header.baseOffset === refused,
    });
    await walk.walk(segment, first, () => 1 << 30, refusing, null);
    t.same(offsets, Array.from({ length: refused }, (_, i) => i), `the batches before ${refused}`);
    if (refused === 0) {
      // The first window (64 KiB) holds the header of the first batch, not the batch.
      t.same(asked, [{ position: 0, wantBytes: remoteWindowFirstBytes }], "no larger window is asked for");
      t.ok(remoteWindowFirstBytes < batchBytes);
    }
  }
});

t.test("a corrupt batch drops its chunk and is fetched once more; the batches before it are not seen twice", async (t) => {
  const { segment, bytes, batchBytes } = remoteSegment(10, 1000);
  const { remote, dropped } = reader(bytes, { at: 5 * batchBytes + 60, times: 1 });
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collect();
  await walk.walk(segment, first, () => 1 << 30, visit, null);
  t.same(offsets, Array.from({ length: 10 }, (_, i) => i));
  t.same(dropped, [0], "the window holding the bad batch was dropped");
});

t.test("corrupt twice at the same place is never served", async (t) => {
  const { segment, bytes, batchBytes } = remoteSegment(10, 1000);
  const { remote } = reader(bytes, { at: 5 * batchBytes + 60, times: 2 });
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collect();
  await t.rejects(walk.walk(segment, first, () => 1 << 30, visit, null), RemoteCorruptError);
  t.same(offsets, [0, 1, 2, 3, 4], "only the good batches before it");
});

t.test("the visitor stops the walk; without a reader a remote read is unavailable", async (t) => {
  const { segment, bytes } = remoteSegment(10, 1000);
  const { remote, recycled } = reader(bytes);
  const walk = new RemoteWalk("t");
  await t.rejects(walk.walk(segment, first, () => 1000, () => true, null), RemoteReadUnavailableError);
  walk.attach(remote);
  let seen = 0;
  await walk.walk(segment, first, () => 1 << 30, () => ++seen < 3, null);
  t.equal(seen, 3);
  t.equal(recycled.length, 1, "with nothing borrowed, each window goes back at once");
});

t.test("each window waits for a turn of the piece gate", async (t) => {
  const { segment, bytes } = remoteSegment(40, 4000);
  const { remote, asked } = reader(bytes);
  let turns = 0;
  const walk = new RemoteWalk("t");
  walk.attach(remote, {
    turn: () => {
      turns++;
      return Promise.resolve();
    },
  } as never);
  await walk.walk(segment, first, () => 1 << 30, () => true, null);
  t.equal(turns, asked.length);
});

/** A visitor that answers later (as one decoding in pieces does) for every batch `later` picks. */
function collectLater(later: (offset: number) => boolean, stopAt = Infinity) {
  const offsets: number[] = [];
  const visit = (batch: Uint8Array, header: BatchHeader) => {
    for (const m of decodeMessages(batch)) offsets.push(m.offset);
    const more = header.baseOffset < stopAt;
    return later(header.baseOffset) ? Promise.resolve(more) : more;
  };
  return { offsets, visit };
}

t.test("a visitor that answers later sees every batch once, in order, through the same windows", async (t) => {
  const { segment, bytes } = remoteSegment(40, 4000);
  const atOnce = reader(bytes);
  const walk = new RemoteWalk("t");
  walk.attach(atOnce.remote);
  await walk.walk(segment, first, () => 1 << 30, collect().visit, []);
  const later = reader(bytes);
  walk.attach(later.remote);
  const { offsets, visit } = collectLater((offset) => offset % 3 === 0);
  await walk.walk(segment, first, () => 1 << 30, visit, []);
  t.same(offsets, Array.from({ length: 40 }, (_, i) => i));
  t.same(later.asked, atOnce.asked, "the windows asked for do not change");
});

t.test("a later false stops the walk after that batch", async (t) => {
  const { segment, bytes } = remoteSegment(10, 1000);
  const { remote } = reader(bytes);
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collectLater(() => true, 5);
  await walk.walk(segment, first, () => 1 << 30, visit, null);
  t.same(offsets, [0, 1, 2, 3, 4, 5]);
});

t.test("a window cut after a later answer goes on from the next batch, keeping the window", async (t) => {
  const { segment, bytes, batchBytes } = remoteSegment(3, 40_000);
  const { remote, asked, recycled } = reader(bytes);
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collectLater(() => true);
  const borrowed: RemoteChunk[] = [];
  await walk.walk(segment, first, () => 1 << 30, visit, borrowed);
  t.same(offsets, [0, 1, 2], "no batch twice");
  t.equal(asked[1]!.position, batchBytes, "the next window starts at the batch the first one cut");
  t.same(recycled, [], "the first window holds a visited batch: it is the read's, not given back");
  t.equal(borrowed[0]!.start, 0);
});

t.test("a reader whose windows stay short of a batch ends in corrupt data, not endless doubling", async (t) => {
  const { segment, bytes, batchBytes } = remoteSegment(4, 1000);
  // A reader that claims its chunks reach the segment's end but hands out 100 bytes less (as a cache
  // file cut short once did): no window ever holds the last batch whole.
  const { remote, asked } = reader(bytes);
  const chunkAt = remote.chunkAt;
  remote.chunkAt = async (s, position, wantBytes) => {
    const chunk = await chunkAt(s, position, wantBytes);
    const cut = Math.min(chunk.bytes.length, bytes.length - 100 - position);
    return { ...chunk, bytes: chunk.bytes.subarray(0, cut), end: segment.sizeBytes + 1 };
  };
  const walk = new RemoteWalk("t");
  walk.attach(remote);
  const { offsets, visit } = collect();
  await t.rejects(
    walk.walk(segment, first, () => 1 << 30, visit, null),
    { name: "RemoteCorruptError", message: /no whole batch before its end/ },
  );
  t.same(offsets, [0, 1, 2], "the whole batches before it");
  t.ok(asked.length <= 8, `${asked.length} windows asked`);
  t.ok(batchBytes > 100);
});
