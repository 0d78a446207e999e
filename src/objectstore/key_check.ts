import { MalformedError } from "./object_store_errors.ts";

/** Keys are relative paths of non-empty segments, never "." or "..": safe as file paths too. */
export function checkKey(key: string): string {
  const segments = key.split("/");
  const bad = key.length === 0 || key.length > 1024 || key.includes("\u0000") ||
    segments.some((s) => s === "" || s === "." || s === "..");
  if (bad) {
    throw new MalformedError(`Cannot use object key ${JSON.stringify(key.slice(0, 100))}: not a valid key`);
  }
  return key;
}
