/**
 * A body as `Deno.serve` streams a later request of a kept-alive connection: not a byte stream, but
 * pieces of `pieceBytes`, each a buffer of its own.
 */
export function pieceStream(bytes: Uint8Array, pieceBytes: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + pieceBytes));
      at += pieceBytes;
    },
  });
}
