import t from "tap";
import { FrameError, FrameSplitter, requestHeaderBytesMin } from "../../../src/kafka/wire/frame_codec.ts";

/** A frame: an int32 size, then `body`. */
function frame(body: number[]): Uint8Array {
  const bytes = new Uint8Array(4 + body.length);
  new DataView(bytes.buffer).setInt32(0, body.length);
  bytes.set(body, 4);
  return bytes;
}

const bodyA = Array.from({ length: 12 }, (_, i) => i);
const bodyB = Array.from({ length: 30 }, (_, i) => 100 + i);

t.test("frames come out whole, however the stream is cut", (t) => {
  const stream = new Uint8Array([...frame(bodyA), ...frame(bodyB), ...frame(bodyA)]);
  for (const cut of [1, 2, 3, 5, 7, 16, stream.length]) {
    const splitter = new FrameSplitter(1024);
    const frames: number[][] = [];
    for (let at = 0; at < stream.length; at += cut) {
      for (const f of splitter.push(stream.subarray(at, at + cut))) frames.push([...f]);
    }
    t.same(frames, [bodyA, bodyB, bodyA], `cut every ${cut} bytes`);
    t.equal(splitter.bufferedBytes, 0, "nothing left over");
  }
  t.end();
});

t.test("a partial frame is held as a copy: the caller may reuse its buffer", (t) => {
  const splitter = new FrameSplitter(1024);
  const whole = frame(bodyB);
  const buffer = whole.slice(0, 10);
  t.same(splitter.push(buffer), []);
  buffer.fill(0xff);
  const [completed] = splitter.push(whole.subarray(10));
  t.same([...completed!], bodyB);
  t.end();
});

t.test("a size under a request header or over max_frame_bytes is refused before any body is held", (t) => {
  const small = new FrameSplitter(1024);
  t.throws(() => small.push(frame([1, 2, 3])), FrameError, "3 bytes cannot hold a request header");
  const negative = new Uint8Array([0xff, 0xff, 0xff, 0xf0]);
  t.throws(() => new FrameSplitter(1024).push(negative), /shorter than a request header/);
  const big = new FrameSplitter(64);
  const header = new Uint8Array(4);
  new DataView(header.buffer).setInt32(0, 65);
  t.throws(() => big.push(header), /over max_frame_bytes 64/);
  t.equal(big.bufferedBytes, 0, "nothing was held");
  const split = new FrameSplitter(64);
  t.same(split.push(header.subarray(0, 2)), []);
  t.throws(() => split.push(header.subarray(2)), /over max_frame_bytes 64/, "a size that came in two pieces");
  t.equal(split.bufferedBytes, 4, "no more than the size field was held");
  t.throws(() => new FrameSplitter(requestHeaderBytesMin - 1), RangeError);
  t.end();
});

t.test("with copyInto, every frame is a copy in a buffer it gives: the chunk may be reused at once", (t) => {
  const given: number[] = [];
  const splitter = new FrameSplitter(1024, (size) => (given.push(size), new Uint8Array(size)));
  const chunk = new Uint8Array([...frame(bodyA), ...frame(bodyB), ...frame(bodyA).subarray(0, 6)]);
  const frames = splitter.push(chunk);
  chunk.fill(0xff);
  t.same(frames.map((f) => [...f]), [bodyA, bodyB], "whole frames in the chunk are copies, not views");
  const [last] = splitter.push(frame(bodyA).subarray(6));
  t.same([...last!], bodyA, "and so is a frame gathered over two chunks");
  t.same(given, [bodyA.length, bodyB.length, bodyA.length], "one buffer of its size per frame");
  t.end();
});
