/**
 * A body streamed as bytes the way `Deno.serve` streams a socket's: into the reader's own buffer
 * when it brings one, `pieceBytes` at a time; `failAfterBytes` makes the stream fail part way.
 */
export function byteStream(
  bytes: Uint8Array,
  pieceBytes: number,
  failAfterBytes = Infinity,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= failAfterBytes) {
        controller.error(new Error("Cannot read the socket: connection reset"));
        return;
      }
      if (at >= bytes.length) {
        controller.close();
        controller.byobRequest?.respond(0);
        return;
      }
      const request = controller.byobRequest;
      const n = Math.min(pieceBytes, bytes.length - at, request?.view?.byteLength ?? Infinity);
      if (request?.view) {
        new Uint8Array(request.view.buffer, request.view.byteOffset, n).set(bytes.subarray(at, at + n));
        request.respond(n);
      } else {
        controller.enqueue(bytes.slice(at, at + n));
      }
      at += n;
    },
  });
}
