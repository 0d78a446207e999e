import type { StoredMessage } from "../../log/batch/batch_codec.ts";
import { assert } from "../../runtime/assert.ts";

/**
 * A poll's msgpack answer, `{ messages: [{ offset, timestamp, key, headers, payload }], next_offset }`,
 * with the key, each header value and the payload as binary or nil and the headers as a list of
 * `{ name, value }`, written straight into one buffer of its exact size. The generic path (an object
 * per message for msgpackr) enumerates each object's keys and grows its buffer to four times the
 * answer, garbage the collector chases on the pump's thread (docs/TUNING.md, "Poll answers"). The
 * bytes are those msgpackr writes for the same answer (a test compares them).
 */
export function encodePollAnswer(
  messages: readonly StoredMessage[],
  nextOffset: number,
): Uint8Array<ArrayBuffer> {
  let size = headerBytes(2, mapForms) + strBytes("messages") + headerBytes(messages.length, arrayForms) +
    strBytes("next_offset") + numberBytes(nextOffset);
  for (const m of messages) size += messageBytes(m);
  const out = new Writer(size);
  out.mapHeader(2);
  out.str("messages");
  out.arrayHeader(messages.length);
  for (const m of messages) {
    out.mapHeader(5);
    out.str("offset");
    out.number(m.offset);
    out.str("timestamp");
    out.number(m.timestampMs);
    out.str("key");
    out.binOrNil(m.key);
    out.str("headers");
    out.arrayHeader(m.headers.length);
    for (const h of m.headers) {
      out.mapHeader(2);
      out.str("name");
      out.str(h.name);
      out.str("value");
      out.binOrNil(h.value);
    }
    out.str("payload");
    out.binOrNil(m.payload);
  }
  out.str("next_offset");
  out.number(nextOffset);
  assert(out.position === size, "the poll answer's size was computed before it was written");
  return out.bytes;
}

function binOrNilBytes(bytes: Uint8Array | null): number {
  return bytes === null ? 1 : headerBytes(bytes.length, binForms) + bytes.length;
}

/** A header's map: its two field names, each a fixstr. */
const headerFieldBytes = 1 + 1 + "name".length + 1 + "value".length;

function messageBytes(m: StoredMessage): number {
  let size = headerBytes(5, mapForms) + keyBytes + numberBytes(m.offset) + numberBytes(m.timestampMs) +
    binOrNilBytes(m.key) + headerBytes(m.headers.length, arrayForms) + binOrNilBytes(m.payload);
  for (const h of m.headers) size += headerFieldBytes + strBytes(h.name) + binOrNilBytes(h.value);
  return size;
}

/** The five field names of a message, each a fixstr. */
const keyBytes = ["offset", "timestamp", "key", "headers", "payload"].reduce((n, k) => n + 1 + k.length, 0);

/**
 * A msgpack family's length forms: the fix form (`fix | n`, below `fixMax`), then an 8, 16 or 32-bit
 * length after its code; null where the family has no such form.
 */
interface LengthForms {
  fix: number | null;
  fixMax: number;
  code8: number | null;
  code16: number;
  code32: number;
}

const strForms: LengthForms = { fix: 0xa0, fixMax: 0x20, code8: 0xd9, code16: 0xda, code32: 0xdb };
const binForms: LengthForms = { fix: null, fixMax: 0, code8: 0xc4, code16: 0xc5, code32: 0xc6 };
const mapForms: LengthForms = { fix: 0x80, fixMax: 16, code8: null, code16: 0xde, code32: 0xdf };
const arrayForms: LengthForms = { fix: 0x90, fixMax: 16, code8: null, code16: 0xdc, code32: 0xdd };
/** Unsigned integers: a positive fixint is the byte itself. */
const uintForms: LengthForms = { fix: 0x00, fixMax: 0x80, code8: 0xcc, code16: 0xcd, code32: 0xce };

function headerBytes(n: number, f: LengthForms): number {
  if (f.fix !== null && n < f.fixMax) return 1;
  if (f.code8 !== null && n < 0x100) return 2;
  return n < 0x10000 ? 3 : 5;
}

function strBytes(s: string): number {
  const n = utf8Length(s);
  return headerBytes(n, strForms) + n;
}

/** Integers up to 2^32 - 1 as the smallest unsigned form; anything else (offsets past 2^32, microsecond timestamps) as a float64, exactly as the generic encoder does. */
function numberBytes(n: number): number {
  assert(Number.isSafeInteger(n) && n >= 0, "offsets and timestamps are non-negative safe integers");
  return n >>> 0 !== n ? 9 : headerBytes(n, uintForms);
}

/** UTF-8 length without encoding: a lone surrogate becomes U+FFFD (3 bytes), as TextEncoder writes it. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

const encoder = new TextEncoder();

/** Writes msgpack items at a moving position into a buffer sized in advance. */
class Writer {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly #view: DataView;
  position = 0;

  constructor(sizeBytes: number) {
    this.bytes = new Uint8Array(sizeBytes);
    this.#view = new DataView(this.bytes.buffer);
  }

  nil(): void {
    this.bytes[this.position++] = 0xc0;
  }

  mapHeader(n: number): void {
    this.#header(n, mapForms);
  }

  arrayHeader(n: number): void {
    this.#header(n, arrayForms);
  }

  number(n: number): void {
    if (n >>> 0 === n) return this.#header(n, uintForms);
    this.bytes[this.position++] = 0xcb;
    this.#view.setFloat64(this.position, n);
    this.position += 8;
  }

  str(s: string): void {
    const n = utf8Length(s);
    this.#header(n, strForms);
    if (n === s.length) {
      // ASCII, as the field names and most keys are: written in place. encodeInto needs a view of
      // the target and returns an object, two allocations per string, five strings per message:
      // in the storm that was 30 % of everything the heap allocated (a sampling heap profile).
      for (let i = 0; i < n; i++) this.bytes[this.position + i] = s.charCodeAt(i);
    } else {
      const { written } = encoder.encodeInto(s, this.bytes.subarray(this.position, this.position + n));
      assert(written === n, "a string's UTF-8 length was computed before it was written");
    }
    this.position += n;
  }

  binOrNil(bytes: Uint8Array | null): void {
    if (bytes === null) this.nil();
    else this.bin(bytes);
  }

  bin(bytes: Uint8Array): void {
    this.#header(bytes.length, binForms);
    this.bytes.set(bytes, this.position);
    this.position += bytes.length;
  }

  #header(n: number, f: LengthForms): void {
    if (f.fix !== null && n < f.fixMax) {
      this.bytes[this.position++] = f.fix | n;
    } else if (f.code8 !== null && n < 0x100) {
      this.bytes[this.position++] = f.code8;
      this.bytes[this.position++] = n;
    } else if (n < 0x10000) {
      this.bytes[this.position++] = f.code16;
      this.#view.setUint16(this.position, n);
      this.position += 2;
    } else {
      this.bytes[this.position++] = f.code32;
      this.#view.setUint32(this.position, n);
      this.position += 4;
    }
  }
}
