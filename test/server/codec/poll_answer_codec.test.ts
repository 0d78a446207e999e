import t from "tap";
import type { StoredMessage } from "../../../src/log/batch/batch_codec.ts";
import { packMsgpack, unpackMsgpack } from "../../../src/server/codec/body_codec.ts";
import { encodePollAnswer, utf8Length } from "../../../src/server/codec/poll_answer_codec.ts";

/** The same answer as an object per message, through the generic encoder. */
const generic = (messages: StoredMessage[], nextOffset: number) =>
  packMsgpack({
    messages: messages.map((m) => ({
      offset: m.offset,
      timestamp: m.timestampMs,
      key: m.key,
      headers: m.headers.map((h) => ({ name: h.name, value: h.value })),
      payload: m.payload,
    })),
    next_offset: nextOffset,
  });

const utf8 = (s: string) => new TextEncoder().encode(s);
const headerMap = (h: Record<string, string>) =>
  Object.entries(h).map(([name, value]) => ({ name, value: utf8(value) }));

const message = (offset: number, over: Partial<StoredMessage> = {}): StoredMessage => ({
  offset,
  timestampMs: 1_764_000_000_000 + (offset % 1000),
  key: null,
  headers: [],
  payload: new Uint8Array(3).fill(offset & 0xff),
  ...over,
});

t.test("the poll answer's bytes are the generic encoder's, for every size class of every field", (t) => {
  const cases: Record<string, [StoredMessage[], number]> = {
    "no messages": [[], 0],
    "small offsets and a short payload": [[message(0), message(1)], 2],
    "offsets in each integer width": [[
      message(127),
      message(128),
      message(255),
      message(256),
      message(65_535),
    ], 65_536],
    "offsets past 2^32 (written as float64, as the generic encoder does)": [[
      message(2 ** 32),
      message(2 ** 53 - 2),
    ], 2 ** 53 - 1],
    "keys and headers, ASCII and not": [[
      message(7, { key: utf8("k"), headers: headerMap({ a: "1", "größe": "ß→€", emoji: "😀" }) }),
      message(8, { key: utf8("ключ".repeat(20)), headers: headerMap({ ["h".repeat(40)]: "v".repeat(300) }) }),
      message(9, { key: utf8("x".repeat(70_000)) }),
    ], 10],
    "sixteen headers (array16), an empty key, null values and a repeated name": [[
      message(3, {
        key: new Uint8Array(0),
        headers: [
          ...headerMap(Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`n${i}`, `${i}`]))),
          { name: "n0", value: null },
        ],
        payload: null,
      }),
    ], 4],
    "payloads of each bin width, and empty": [[
      message(1, { payload: new Uint8Array(0) }),
      message(2, { payload: new Uint8Array(255).fill(1) }),
      message(3, { payload: new Uint8Array(256).fill(2) }),
      message(4, { payload: new Uint8Array(65_536).fill(3) }),
    ], 5],
    "sixteen messages (array16)": [Array.from({ length: 16 }, (_, i) => message(i)), 16],
  };
  for (const [name, [messages, next]] of Object.entries(cases)) {
    const mine = encodePollAnswer(messages, next);
    t.same(mine, generic(messages, next), name);
    t.same(unpackMsgpack(mine), unpackMsgpack(generic(messages, next)), `${name}: decodes the same`);
  }
  t.end();
});

t.test("payloads that are views into a larger buffer are copied from their own range", (t) => {
  const window = new Uint8Array(64).map((_, i) => i);
  const messages = [
    message(0, { payload: window.subarray(10, 14) }),
    message(1, { payload: window.subarray(60) }),
  ];
  const decoded = unpackMsgpack(encodePollAnswer(messages, 2)) as { messages: { payload: Uint8Array }[] };
  t.same([...decoded.messages[0]!.payload], [10, 11, 12, 13]);
  t.same([...decoded.messages[1]!.payload], [60, 61, 62, 63]);
  t.end();
});

t.test("the UTF-8 length agrees with TextEncoder, surrogate pairs and lone surrogates included", (t) => {
  const encoder = new TextEncoder();
  for (const s of ["", "abc", "é", "€", "😀", "a😀b", "\ud800", "\udc00x", "\ud800\ud800", "ß→€😀"]) {
    t.equal(utf8Length(s), encoder.encode(s).length, JSON.stringify(s));
  }
  t.end();
});
