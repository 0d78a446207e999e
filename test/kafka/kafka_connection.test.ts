import t from "tap";
import { serveConnection } from "../../src/kafka/kafka_connection.ts";
import { KafkaDecodeError } from "../../src/kafka/wire/kafka_codec.ts";
import type { KafkaResponse, KafkaSession } from "../../src/kafka/kafka_session.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { MemoryConnection } from "../helpers/kafka/kafka_wire.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

/** A request frame whose body is its number: 12 bytes after the size field. */
function frame(n: number): Uint8Array {
  const bytes = new Uint8Array(4 + 12);
  const view = new DataView(bytes.buffer);
  view.setInt32(0, 12);
  view.setInt32(12, n);
  return bytes;
}

const numberOf = (f: Uint8Array) => new DataView(f.buffer, f.byteOffset).getInt32(8);

/** A session that answers each request when the test releases it, echoing its number. */
class HeldSession implements KafkaSession {
  readonly handled: number[] = [];
  readonly #release = new Map<number, (answer: Uint8Array[] | null | Error) => void>();
  readonly released: number[] = [];
  closedCount = 0;

  handle(f: Uint8Array): Promise<KafkaResponse | null> {
    const n = numberOf(f);
    this.handled.push(n);
    return new Promise((resolve, reject) => {
      this.#release.set(n, (answer) => {
        if (answer instanceof Error) reject(answer);
        else resolve(answer === null ? null : { pieces: answer, release: () => this.released.push(n) });
      });
    });
  }

  answer(n: number, answer: Uint8Array[] | null | Error = [echo(n)]): void {
    this.#release.get(n)!(answer);
  }

  closed(): void {
    this.closedCount++;
  }
}

function echo(n: number): Uint8Array {
  const bytes = new Uint8Array(12);
  new DataView(bytes.buffer).setInt32(0, n);
  return bytes;
}

const answered = (c: MemoryConnection) =>
  c.frames().map((f) => new DataView(f.buffer, f.byteOffset).getInt32(0));
const idleTimeoutMs = 60_000;
const limits = { maxFrameBytes: 1024, requestsInFlightMax: 3, idleTimeoutMs };

const runtimeOf = (clock: VirtualClock, turn = () => Promise.resolve()) => ({
  clock,
  turn,
  logger: silentLogger(),
});

/** The waits of these tests: a few turns of the loop between checks, for at most 5 s of real time. */
const briefly = { deadlineMs: 5000, pace: realTime(0) };

t.test("pipelined requests are handled together and answered in request order", async (t) => {
  const connection = new MemoryConnection();
  const session = new HeldSession();
  const served = serveConnection(connection, session, limits, runtimeOf(new VirtualClock()));
  const joined = new Uint8Array([...frame(1), ...frame(2), ...frame(3)]);
  connection.deliver(joined);
  await waitFor("three requests handled", () => session.handled.length === 3, briefly);
  session.answer(3);
  session.answer(2);
  await new Promise((r) => setImmediate(r));
  t.same(answered(connection), [], "nothing goes out before the first answer");
  session.answer(1);
  await waitFor("three answers written", () => answered(connection).length === 3, briefly);
  t.same(answered(connection), [1, 2, 3]);
  t.same(session.released.sort(), [1, 2, 3], "each answer gave back what it held once written");
  connection.deliver(null);
  t.equal(await served, null, "the peer closed it");
  t.equal(session.closedCount, 1);
});

t.test("past max_in_flight_requests a request waits for an answer before it is handled", async (t) => {
  const connection = new MemoryConnection();
  const session = new HeldSession();
  const served = serveConnection(connection, session, limits, runtimeOf(new VirtualClock()));
  for (let n = 1; n <= 5; n++) connection.deliver(frame(n));
  await waitFor("three requests handled", () => session.handled.length === 3, briefly);
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  t.same(session.handled, [1, 2, 3], "the fourth is not handled while three are in flight");
  session.answer(1);
  await waitFor("the fourth request handled", () => session.handled.length === 4, briefly);
  t.same(session.handled, [1, 2, 3, 4]);
  session.answer(2);
  session.answer(3);
  session.answer(4);
  await waitFor("the fifth request handled", () => session.handled.length === 5, briefly);
  session.answer(5, null);
  connection.deliver(null);
  t.equal(await served, null);
  t.same(answered(connection), [1, 2, 3, 4], "a null answer (acks 0) writes nothing");
});

t.test("a frame split across reads is whole before it is handled", async (t) => {
  const connection = new MemoryConnection();
  const session = new HeldSession();
  const served = serveConnection(connection, session, limits, runtimeOf(new VirtualClock()));
  const bytes = frame(7);
  for (const b of bytes) connection.deliver(new Uint8Array([b]));
  await waitFor("the request handled", () => session.handled.length === 1, briefly);
  session.answer(7);
  connection.deliver(null);
  t.equal(await served, null);
  t.same(answered(connection), [7]);
});

t.test("a malformed or oversized frame closes the connection", async (t) => {
  for (
    const [size, name] of [[3, "shorter than a header"], [2048, "over max_frame_bytes"], [
      -1,
      "negative",
    ]] as const
  ) {
    const connection = new MemoryConnection();
    const session = new HeldSession();
    const served = serveConnection(connection, session, limits, runtimeOf(new VirtualClock()));
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setInt32(0, size);
    connection.deliver(bytes);
    t.equal(await served, "malformed_frame", name);
    t.ok(connection.closed, `${name}: closed`);
    t.same(session.handled, [], `${name}: nothing handled`);
  }
});

t.test("a request the session rejects closes the connection after the answers before it", async (t) => {
  const connection = new MemoryConnection();
  const session = new HeldSession();
  const served = serveConnection(connection, session, limits, runtimeOf(new VirtualClock()));
  connection.deliver(new Uint8Array([...frame(1), ...frame(2), ...frame(3)]));
  await waitFor("three requests handled", () => session.handled.length === 3, briefly);
  session.answer(2, new KafkaDecodeError("a truncated body"));
  session.answer(1);
  t.equal(await served, "malformed_request");
  t.same(answered(connection), [1], "the answer before the bad request went out, none after");
  t.ok(connection.closed);
  session.answer(3);
  await waitFor("the third answer given back", () => session.released.includes(3), briefly);
  t.same(session.released, [1, 3], "an answer that is never written still gives back what it holds");
});

t.test("connection_idle_timeout closes a connection with nothing read or owed, and no sooner", async (t) => {
  const clock = new VirtualClock();
  const connection = new MemoryConnection();
  const session = new HeldSession();
  let result: string | null | undefined;
  const served = serveConnection(connection, session, limits, runtimeOf(clock));
  served.then((r) => (result = r));
  clock.advance(idleTimeoutMs - 1);
  connection.deliver(frame(1));
  await waitFor("the request handled", () => session.handled.length === 1, briefly);
  clock.advance(idleTimeoutMs * 3);
  await new Promise((r) => setImmediate(r));
  t.notOk(connection.closed, "a connection owed an answer (a long poll) is kept");
  session.answer(1);
  await waitFor("the answer written", () => answered(connection).length === 1, briefly);
  clock.advance(idleTimeoutMs - 1);
  await new Promise((r) => setImmediate(r));
  t.notOk(connection.closed, "the idle time counts from the last answer written");
  t.equal(result, undefined);
  clock.advance(1);
  t.equal(await served, "idle", "closed once idle for the whole timeout");
  t.ok(connection.closed);
  t.equal(session.closedCount, 1);
  t.equal(clock.pendingTimers(), 0, "no timer is left behind");
});

t.test("a connection the peer closes leaves no idle timer behind", async (t) => {
  const clock = new VirtualClock();
  const connection = new MemoryConnection();
  const served = serveConnection(connection, new HeldSession(), limits, runtimeOf(clock));
  connection.deliver(null);
  t.equal(await served, null);
  t.equal(clock.pendingTimers(), 0);
});

t.test("a large frame is read, and a large answer written, with a turn per piece of 1 MiB", async (t) => {
  const bigLimits = { ...limits, maxFrameBytes: 8 << 20 };
  const connection = new MemoryConnection();
  const session = new HeldSession();
  const turns: string[] = [];
  const served = serveConnection(
    connection,
    session,
    bigLimits,
    runtimeOf(
      new VirtualClock(),
      () => Promise.resolve(void turns.push(`after ${connection.written.length} writes`)),
    ),
  );
  // A 3 MiB request arriving in 64 KiB chunks: a turn after each 1 MiB read.
  const request = new Uint8Array(4 + (3 << 20));
  new DataView(request.buffer).setInt32(0, 3 << 20);
  new DataView(request.buffer).setInt32(12, 9);
  for (let at = 0; at < request.length; at += 64 * 1024) {
    connection.deliver(request.subarray(at, at + 64 * 1024));
  }
  await waitFor("the request handled", () => session.handled.length === 1, briefly);
  t.equal(turns.length, 3, "three turns for 3 MiB read");
  // A 3 MiB answer of twelve 256 KiB pieces: a turn before each 1 MiB after the first.
  const pieces = Array.from({ length: 12 }, () => new Uint8Array(256 * 1024));
  turns.length = 0;
  session.answer(9, pieces);
  await waitFor("the answer given back", () => session.released.includes(9), briefly);
  t.same(
    turns,
    ["after 5 writes", "after 9 writes"],
    "the size field and four pieces, then a turn, and so on",
  );
  t.equal(connection.written.reduce((n, w) => n + w.length, 0), 4 + (3 << 20), "the whole answer");
  connection.deliver(null);
  t.equal(await served, null);
});

t.test("a large frame is read into a pooled buffer, given back once its request is handled", async (t) => {
  const { BufferPool } = await import("../../src/runtime/memory/buffers.ts");
  const { pooledFrameBytesMin } = await import("../../src/kafka/kafka_connection.ts");
  const frames = new BufferPool({ bufferBytes: 256 * 1024, buffersMax: 2 });
  const connection = new MemoryConnection();
  const session = new HeldSession();
  const big = new Uint8Array(4 + pooledFrameBytesMin);
  new DataView(big.buffer).setInt32(0, pooledFrameBytesMin);
  new DataView(big.buffer).setInt32(12, 7);
  const served = serveConnection(
    connection,
    session,
    { ...limits, maxFrameBytes: 1024 * 1024 },
    { ...runtimeOf(new VirtualClock()), frames },
  );
  connection.deliver(big.subarray(0, 1000));
  connection.deliver(big.subarray(1000));
  connection.deliver(frame(8));
  await waitFor("both requests handled", () => session.handled.length === 2, briefly);
  t.equal(frames.lentCount, 1, "the large frame's buffer is lent; the small one has its own");
  session.answer(7);
  session.answer(8);
  await waitFor("the large frame's buffer given back", () => frames.lentCount === 0, briefly);
  t.equal(frames.freeCount, 1, "given back to the pool once handled");
  t.same(answered(connection), [7, 8]);
  connection.deliver(null);
  t.equal(await served, null, "the peer closed it");
});

t.test("pooled frame buffers come back when the connection ends mid-frame or on a malformed size", async (t) => {
  const { BufferPool } = await import("../../src/runtime/memory/buffers.ts");
  const { pooledFrameBytesMin } = await import("../../src/kafka/kafka_connection.ts");
  const bigFrame = (n: number) => {
    const bytes = new Uint8Array(4 + pooledFrameBytesMin);
    new DataView(bytes.buffer).setInt32(0, pooledFrameBytesMin);
    new DataView(bytes.buffer).setInt32(12, n);
    return bytes;
  };
  const serve = (
    frames: InstanceType<typeof BufferPool>,
    session: HeldSession,
    connection: MemoryConnection,
  ) =>
    serveConnection(
      connection,
      session,
      { ...limits, maxFrameBytes: 1024 * 1024 },
      { ...runtimeOf(new VirtualClock()), frames },
    );

  const halfPool = new BufferPool({ bufferBytes: 256 * 1024, buffersMax: 2 });
  const half = new MemoryConnection();
  const halfServed = serve(halfPool, new HeldSession(), half);
  half.deliver(bigFrame(1).subarray(0, 1000));
  await waitFor("a buffer lent to the half-gathered frame", () => halfPool.lentCount === 1, briefly);
  half.deliver(null);
  t.equal(await halfServed, null, "the peer closed it");
  t.equal(halfPool.lentCount, 0, "the half-gathered frame's buffer is given back");

  // Two whole large frames, then a size below a request header, all in one read: the connection is
  // closed as malformed, and the frames the session never saw are given back.
  const badPool = new BufferPool({ bufferBytes: 256 * 1024, buffersMax: 4 });
  const bad = new MemoryConnection();
  const session = new HeldSession();
  const badServed = serve(badPool, session, bad);
  const badSize = new Uint8Array(4);
  new DataView(badSize.buffer).setInt32(0, 3);
  bad.deliver(new Uint8Array([...bigFrame(2), ...bigFrame(3), ...badSize]));
  t.equal(await badServed, "malformed_frame", "closed for the malformed size");
  t.same(session.handled, [], "no frame of the failed read reached the session");
  t.equal(badPool.lentCount, 0, "both whole frames' buffers are given back");
});
