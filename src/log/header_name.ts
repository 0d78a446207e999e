import { RecordBatchError } from "./record_batch.ts";

const fromUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A record header's name from its bytes; a corrupt batch when they are not UTF-8. */
export function decodeHeaderName(bytes: Uint8Array): string {
  try {
    return fromUtf8.decode(bytes);
  } catch (error) {
    throw new RecordBatchError("corrupt", "a header's name is not UTF-8", { cause: error });
  }
}
