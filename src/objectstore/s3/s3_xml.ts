import { isBug } from "../../runtime/assert.ts";
import { XMLParser } from "fast-xml-parser";
import type { ListedObject } from "../object_store.ts";
import { trimEtag } from "./s3_response.ts";

// Tag values stay strings: keys such as "00000000000000000001.log" must not become numbers.
const parser = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  // Stores escape key characters as numeric references (s3rver writes &#x27; for ').
  htmlEntities: true,
  isArray: (name) => ["Contents", "Deleted", "Error", "CommonPrefixes"].includes(name),
});

export interface S3ErrorBody {
  code: string;
  message: string;
}

export function parseErrorBody(xml: string): S3ErrorBody {
  try {
    const doc = parser.parse(xml);
    const error = Array.isArray(doc?.Error) ? doc.Error[0] : doc?.Error;
    return { code: String(error?.Code ?? ""), message: String(error?.Message ?? "") };
  } catch (error) {
    if (isBug(error)) throw error;
    // An error answer whose body is not XML: the caller's typed error then names the answer by its
    // HTTP status alone, and that error is what gets logged and counted.
    return { code: "", message: "" };
  }
}

export interface ListV2Result {
  objects: ListedObject[];
  truncated: boolean;
}

export function parseListV2(xml: string): ListV2Result {
  const result = parser.parse(xml)?.ListBucketResult;
  if (result === undefined) throw new Error("not a ListBucketResult");
  const contents: { Key: string; Size: string; LastModified?: string; ETag?: string }[] = result.Contents ??
    [];
  return {
    objects: contents.map((c) => ({
      key: String(c.Key),
      sizeBytes: Number(c.Size),
      lastModifiedMs: lastModifiedOf(c.LastModified),
      etag: trimEtag(String(c.ETag ?? "")),
    })),
    truncated: String(result.IsTruncated) === "true",
  };
}

/**
 * An object without a readable LastModified reads as written now (Infinity is never older than the
 * grace), so a store that omits it can never get an object deleted early.
 */
function lastModifiedOf(text: string | undefined): number {
  const ms = text === undefined ? NaN : Date.parse(String(text));
  return Number.isFinite(ms) ? ms : Number.POSITIVE_INFINITY;
}

export interface DeleteOutcome {
  deleted: string[];
  errors: { key: string; code: string; message: string }[];
}

export function parseDeleteResult(xml: string): DeleteOutcome {
  const result = parser.parse(xml)?.DeleteResult;
  if (result === undefined) throw new Error("not a DeleteResult");
  return {
    deleted: (result.Deleted ?? []).map((d: { Key: string }) => String(d.Key)),
    errors: (result.Error ?? []).map((e: { Key: string; Code: string; Message: string }) => ({
      key: String(e.Key),
      code: String(e.Code ?? ""),
      message: String(e.Message ?? ""),
    })),
  };
}

export function deleteRequestXml(keys: readonly string[]): string {
  const objects = keys.map((k) => `<Object><Key>${escapeXml(k)}</Key></Object>`).join("");
  return `<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>false</Quiet>${objects}</Delete>`;
}

function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!,
  );
}
