/** Joins byte pieces into one buffer; `totalBytes` saves a pass when the caller already knows it. */
export function concatBytes(pieces: readonly Uint8Array[], totalBytes?: number): Uint8Array {
  const out = new Uint8Array(totalBytes ?? pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}
