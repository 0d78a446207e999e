import { Buffer } from "node:buffer";
import type { MessageInput, StoredMessage } from "../log/batch_codec.ts";
import { badRequest } from "./api_errors.ts";
import type { Encoding } from "./body_codec.ts";

export const messagesPerRequestMax = 10_000;
export const keyBytesMax = 4096;
export const headersPerMessageMax = 64;
export const headerNameBytesMax = 255;
export const headerValueBytesMax = 64 * 1024;

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const encoder = new TextEncoder();

/** Validates the `messages` of a produce request; payloads are base64 in JSON and bytes in msgpack. */
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
  return {
    payload: parsePayload(m["payload"], where, encoding),
    key: parseKey(m["key"], where),
    headers: parseHeaders(m["headers"], where),
  };
}

function parsePayload(payload: unknown, where: string, encoding: Encoding): Uint8Array {
  if (encoding === "msgpack" && payload instanceof Uint8Array) return payload;
  if (typeof payload !== "string" || !base64Pattern.test(payload)) {
    const expected = encoding === "msgpack" ? "binary or a base64 string" : "a base64 string";
    throw badRequest("invalid_base64", `${where}.payload must be ${expected}`);
  }
  const bytes = Buffer.from(payload, "base64");
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function parseKey(key: unknown, where: string): string | null {
  if (key === undefined || key === null) return null;
  if (typeof key !== "string" || encoder.encode(key).length > keyBytesMax) {
    throw badRequest("invalid_messages", `${where}.key must be a string of at most ${keyBytesMax} bytes`);
  }
  return key;
}

function parseHeaders(headers: unknown, where: string): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (typeof headers !== "object" || Array.isArray(headers)) {
    throw badRequest("invalid_messages", `${where}.headers must be an object of strings`);
  }
  const entries = Object.entries(headers as Record<string, unknown>);
  if (entries.length > headersPerMessageMax) {
    throw badRequest("invalid_messages", `${where}.headers has more than ${headersPerMessageMax} entries`);
  }
  for (const [name, value] of entries) {
    if (name === "" || encoder.encode(name).length > headerNameBytesMax) {
      throw badRequest("invalid_messages", `${where}.headers names must be 1 to ${headerNameBytesMax} bytes`);
    }
    if (typeof value !== "string" || encoder.encode(value).length > headerValueBytesMax) {
      throw badRequest(
        "invalid_messages",
        `${where}.headers.${name} must be a string of at most ${headerValueBytesMax} bytes`,
      );
    }
  }
  return headers as Record<string, string>;
}

/** A stored message as the API returns it. */
export function messageView(m: StoredMessage, encoding: Encoding): Record<string, unknown> {
  return {
    offset: m.offset,
    timestamp: m.timestampUs,
    key: m.key,
    headers: m.headers,
    payload: encoding === "msgpack"
      ? m.payload
      : Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength).toString("base64"),
  };
}
