import { Packr } from "msgpackr";
import { assert } from "../../runtime/assert.ts";
import { freeArrayBuffer } from "../../runtime/memory/buffers.ts";
import { badRequest } from "../api_errors.ts";

export type Encoding = "json" | "msgpack";

export const msgpackContentType = "application/msgpack";

/** Plain msgpack maps and binary, no msgpackr extensions, so any msgpack client can read them. */
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

/** The encoding of a request body, from its content type. */
export function requestEncoding(request: Request): Encoding {
  return (request.headers.get("content-type") ?? "").includes(msgpackContentType) ? "msgpack" : "json";
}

/** The encoding of the answer: msgpack when asked for in `accept`, or when the request was msgpack. */
export function responseEncoding(request: Request): Encoding {
  if ((request.headers.get("accept") ?? "").includes(msgpackContentType)) return "msgpack";
  return requestEncoding(request);
}

/** Decodes a body as a JSON or msgpack object; anything else is a 400. */
export function decodeBody(bytes: Uint8Array, encoding: Encoding): Record<string, unknown> {
  let value: unknown;
  try {
    value = encoding === "msgpack"
      ? packr.unpack(bytes)
      : bytes.length === 0
      ? {}
      : JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw badRequest(
      "malformed_body",
      `Cannot parse request body: it is not valid ${encoding === "msgpack" ? "msgpack" : "JSON"}`,
      { cause: error },
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest("malformed_body", "Cannot parse request body: expected an object");
  }
  return value as Record<string, unknown>;
}

/**
 * Encoded answers this large go out as a stream of one piece: a byte body is copied when the
 * Response is made (the fetch standard says so), a stream's pieces are not, and a poll's answer of
 * 100 KiB or more copied at every poll is garbage the collector must chase on the pump's thread.
 */
export const streamedBodyBytesMin = 64 * 1024;

export function encodeResponse(status: number, body: unknown, encoding: Encoding): Response {
  if (encoding === "msgpack") return msgpackResponse(status, packMsgpack(body));
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/**
 * A response of encoded msgpack bytes, which it owns from now on. With `freeWhenRead`, the bytes'
 * buffer must be theirs alone (as a poll answer's is): it is freed as soon as the body's reader asks
 * for more after the one piece, or cancels, rather than at a later garbage collection
 * (`freeArrayBuffer`). A reader asks again only once it is done with the piece; the HTTP layer keeps
 * its own hold on a piece it is still writing, so freeing it early cannot take bytes from under it.
 */
export function msgpackResponse(
  status: number,
  bytes: Uint8Array<ArrayBuffer>,
  options: { freeWhenRead?: boolean; free?: (buffer: ArrayBuffer) => unknown } = {},
): Response {
  const headers = { "content-type": msgpackContentType };
  if (bytes.length < streamedBodyBytesMin) return new Response(bytes, { status, headers });
  const freeWhenRead = options.freeWhenRead ?? false;
  assert(
    !freeWhenRead || (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength),
    "Cannot free an answer's buffer when read: the bytes are not the whole buffer",
  );
  const free = options.free ?? freeArrayBuffer;
  let handedOver = false;
  const done = () => {
    if (freeWhenRead) free(bytes.buffer);
  };
  // A high-water mark of 0: the piece is handed over only when asked for, so the next ask (the
  // reader done with it) is the sign that the buffer is free to go. A closed stream is never
  // pulled again.
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!handedOver) {
        handedOver = true;
        return controller.enqueue(bytes);
      }
      controller.close();
      done();
    },
    cancel: done,
  }, { highWaterMark: 0 });
  return new Response(stream, { status, headers: { ...headers, "content-length": String(bytes.length) } });
}

export function packMsgpack(value: unknown): Uint8Array<ArrayBuffer> {
  const packed = packr.pack(value);
  return new Uint8Array(packed.buffer as ArrayBuffer, packed.byteOffset, packed.byteLength);
}

export function unpackMsgpack(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}
