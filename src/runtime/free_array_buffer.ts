/**
 * Frees an `ArrayBuffer`'s memory now instead of at a later garbage collection, where the runtime
 * can: `transfer(0)` detaches the buffer, and the engine lets go of its memory at once unless
 * something else still holds it (a write of it in flight keeps its own hold until it is done).
 * Every view of the buffer reads as empty afterwards, so only the buffer's last user may call it.
 *
 * Why: a poll's answer is an `ArrayBuffer` of its own, about 100 KiB, made for each poll. Once it is
 * sent it is garbage, but the engine frees it only when a minor collection finds it dead, and in
 * the pump benchmark's storm the answers that died between two collections added about ten
 * megabytes to the process (docs/TUNING.md, "Poll answers").
 *
 * Returns whether the memory was let go: false where the runtime has no `transfer` (Node 20; the
 * collector frees it in time) or the buffer was already detached.
 */
export function freeArrayBuffer(buffer: ArrayBuffer): boolean {
  const transferable = buffer as ArrayBuffer & {
    transfer?: (length: number) => ArrayBuffer;
    detached?: boolean;
  };
  if (typeof transferable.transfer !== "function" || transferable.detached === true) return false;
  transferable.transfer(0);
  return true;
}
