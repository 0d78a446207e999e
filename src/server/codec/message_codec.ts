import { Buffer } from "node:buffer";
import type { MessageInput, RecordHeader, StoredMessage } from "../../log/batch/batch_codec.ts";
import { badRequest } from "../api_errors.ts";
import type { Encoding } from "./body_codec.ts";

/**
 * Messages in the HTTP API's bodies (docs/API.md, "Messages"): Kafka's record model. In JSON, bytes
 * are base64 strings and text keys or header values may be plain strings; in msgpack, bytes are
 * binary. Null stays null: a null key, a null value, a null header value.
 */

export const messagesPerRequestMax = 10_000;
export const keyBytesMax = 64 * 1024;
export const headersPerMessageMax = 64;
export const headerNameBytesMax = 255;
export const headerValueBytesMax = 64 * 1024;

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const encoder = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Validates the `messages` of a produce request. */
export function parseMessages(body: Record<string, unknown>, encoding: Encoding): MessageInput[] {
  const list = body["messages"];
  if (!Array.isArray(list) || list.length === 0 || list.length > messagesPerRequestMax) {
    throw badRequest(
      "invalid_messages",
      `Cannot produce: messages must be an array of 1 to ${messagesPerRequestMax}`,
    );
  }
  return list.map((m, i) => parseMessage(m, i, encoding));
}

function parseMessage(raw: unknown, i: number, encoding: Encoding): MessageInput {
  const where = `Cannot produce: messages[${i}]`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw badRequest("invalid_messages", `${where} is not an object`);
  }
  const m = raw as Record<string, unknown>;
  if (!("payload" in m)) {
    throw badRequest("invalid_messages", `${where}.payload is missing (null for a null value)`);
  }
  const timestamp = m["timestamp"];
  if (timestamp !== undefined && !(Number.isSafeInteger(timestamp) && (timestamp as number) >= 0)) {
    throw badRequest("invalid_messages", `${where}.timestamp must be milliseconds since the epoch`);
  }
  return {
    payload: parseBytes(m["payload"], `${where}.payload`, encoding, null),
    key: parseKey(m, where, encoding),
    headers: parseHeaders(m["headers"], where, encoding),
    ...(timestamp === undefined ? {} : { timestampMs: timestamp as number }),
  };
}

/** Bytes: binary (msgpack) or base64 (JSON, or msgpack as text); null stays null. */
function parseBytes(
  value: unknown,
  field: string,
  encoding: Encoding,
  maxBytes: number | null,
): Uint8Array | null {
  if (value === null) return null;
  let bytes: Uint8Array;
  if (encoding === "msgpack" && value instanceof Uint8Array) bytes = value;
  else if (typeof value === "string" && base64Pattern.test(value)) {
    const decoded = Buffer.from(value, "base64");
    bytes = new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
  } else {
    const expected = encoding === "msgpack" ? "binary, a base64 string or null" : "a base64 string or null";
    throw badRequest("invalid_base64", `${field} must be ${expected}`);
  }
  if (maxBytes !== null && bytes.length > maxBytes) {
    throw badRequest("invalid_messages", `${field} is over ${maxBytes} bytes`);
  }
  return bytes;
}

/** `key` (text, or binary in msgpack) or `key_base64` (bytes in JSON); neither: no key. */
function parseKey(m: Record<string, unknown>, where: string, encoding: Encoding): string | Uint8Array | null {
  const key = m["key"];
  const base64 = m["key_base64"];
  if (key !== undefined && key !== null && base64 !== undefined) {
    throw badRequest("invalid_messages", `${where} has both key and key_base64`);
  }
  if (base64 !== undefined) return parseBytes(base64, `${where}.key_base64`, "json", keyBytesMax);
  if (key === undefined || key === null) return null;
  if (encoding === "msgpack" && key instanceof Uint8Array) {
    return parseBytes(key, `${where}.key`, encoding, keyBytesMax);
  }
  if (typeof key !== "string" || encoder.encode(key).length > keyBytesMax) {
    throw badRequest("invalid_messages", `${where}.key must be a string of at most ${keyBytesMax} bytes`);
  }
  return key;
}

/** An object of text values, or a list of `{name, value | value_base64}` (names may repeat). */
function parseHeaders(headers: unknown, where: string, encoding: Encoding): RecordHeader[] {
  if (headers === undefined || headers === null) return [];
  const entries: [string, unknown, unknown][] = Array.isArray(headers)
    ? headers.map((h, i) => headerEntry(h, `${where}.headers[${i}]`))
    : typeof headers === "object"
    ? Object.entries(headers as Record<string, unknown>).map(([name, value]) => [name, value, undefined])
    : (() => {
      throw badRequest("invalid_messages", `${where}.headers must be an object or a list`);
    })();
  if (entries.length > headersPerMessageMax) {
    throw badRequest("invalid_messages", `${where}.headers has more than ${headersPerMessageMax} entries`);
  }
  return entries.map(([name, value, base64]) => {
    if (typeof name !== "string" || name === "" || encoder.encode(name).length > headerNameBytesMax) {
      throw badRequest("invalid_messages", `${where}.headers names must be 1 to ${headerNameBytesMax} bytes`);
    }
    const field = `${where}.headers.${name}`;
    if (base64 !== undefined) return { name, value: parseBytes(base64, field, "json", headerValueBytesMax) };
    if (typeof value === "string" && encoder.encode(value).length <= headerValueBytesMax) {
      return { name, value: encoder.encode(value) };
    }
    if (value === null || (encoding === "msgpack" && value instanceof Uint8Array)) {
      return { name, value: parseBytes(value, field, encoding, headerValueBytesMax) };
    }
    throw badRequest(
      "invalid_messages",
      `${field} must be a string of at most ${headerValueBytesMax} bytes or null`,
    );
  });
}

function headerEntry(raw: unknown, where: string): [string, unknown, unknown] {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw badRequest("invalid_messages", `${where} must be an object {name, value}`);
  }
  const h = raw as Record<string, unknown>;
  if (h["value"] !== undefined && h["value_base64"] !== undefined) {
    throw badRequest("invalid_messages", `${where} has both value and value_base64`);
  }
  return [h["name"] as string, h["value"] ?? null, h["value_base64"]];
}

/** The text of UTF-8 bytes, or null when they are not UTF-8. */
export function utf8Text(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch (error) {
    // The strict decoder's refusal of bytes that are not UTF-8 (a TypeError): the answer is "not
    // text", which the caller gives as base64 instead.
    if (error instanceof TypeError) return null;
    throw error;
  }
}

const base64Of = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");

/**
 * A stored message as the JSON answer has it: `key` as text (or `key_base64` when it is not UTF-8),
 * headers as a list of `{name, value}` (or `value_base64`), the payload in base64; nulls as null.
 */
export function messageView(m: StoredMessage): Record<string, unknown> {
  const keyText = m.key === null ? null : utf8Text(m.key);
  return {
    offset: m.offset,
    timestamp: m.timestampMs,
    key: keyText,
    ...(m.key !== null && keyText === null ? { key_base64: base64Of(m.key) } : {}),
    headers: m.headers.map((h) => {
      const text = h.value === null ? null : utf8Text(h.value);
      return h.value !== null && text === null
        ? { name: h.name, value_base64: base64Of(h.value) }
        : { name: h.name, value: text };
    }),
    payload: m.payload === null ? null : base64Of(m.payload),
  };
}
