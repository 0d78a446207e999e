import t from "tap";
import {
  type BatchRecord,
  checkRecordFraming,
  decodeRecord,
  encodeRecordBatch,
  RecordBatchError,
  recordBatchHeaderBytes,
} from "../../../src/log/batch/record_batch.ts";
import { Rng } from "../../../src/runtime/rng.ts";
import { initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";

await initCrc32c();

/** The framing check as decoding every record makes it: the reference the walker must agree with. */
function decodingCheck(batch: Uint8Array, count: number): void {
  let at = recordBatchHeaderBytes;
  for (let i = 0; i < count; i++) {
    if (at >= batch.length) throw new RecordBatchError("corrupt", `it ends after ${i} of ${count} records`);
    const { record, next } = decodeRecord(batch, at);
    if (record.offsetDelta !== i) throw new RecordBatchError("corrupt", `record ${i} has offset delta`);
    at = next;
  }
  if (at !== batch.length) throw new RecordBatchError("corrupt", "bytes follow");
}

const outcome = (check: () => void) => {
  try {
    check();
    return "ok";
  } catch (error) {
    if (error instanceof RecordBatchError) return "refused";
    throw error;
  }
};

function randomRecords(rng: Rng): BatchRecord[] {
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => rng.nextU32() & 0xff);
  return Array.from({ length: 1 + (rng.nextU32() % 20) }, (_, i) => ({
    offsetDelta: i,
    timestampDelta: rng.nextU32() % 100_000,
    key: rng.nextU32() % 3 === 0 ? null : bytes(rng.nextU32() % 40),
    value: rng.nextU32() % 5 === 0 ? null : bytes(rng.nextU32() % 300),
    headers: Array.from({ length: rng.nextU32() % 3 }, (_, h) => ({
      name: `h${h}-é`,
      value: rng.nextU32() % 2 === 0 ? null : bytes(rng.nextU32() % 10),
    })),
  }));
}

t.test("the framing walker passes and refuses exactly what decoding every record does", (t) => {
  const rng = new Rng(26);
  let refused = 0;
  let mutations = 0;
  for (let round = 0; round < 300; round++) {
    const records = randomRecords(rng);
    const batch = encodeRecordBatch(records, {
      baseOffset: 0,
      baseTimestampMs: 1,
      maxTimestampMs: 1,
      timestampType: "create_time",
    });
    t.equal(
      outcome(() => checkRecordFraming(batch, records.length)),
      "ok",
      `round ${round}: a whole batch passes`,
    );
    for (let m = 0; m < 20; m++) {
      const damaged = batch.slice();
      const at = recordBatchHeaderBytes + (rng.nextU32() % (batch.length - recordBatchHeaderBytes));
      damaged[at] = rng.nextU32() & 0xff;
      const cut = rng.nextU32() % 4 === 0
        ? damaged.subarray(0, damaged.length - 1 - (rng.nextU32() % 8))
        : damaged;
      const count = rng.nextU32() % 6 === 0 ? records.length + 1 : records.length;
      const walker = outcome(() => checkRecordFraming(cut, count));
      const reference = outcome(() => decodingCheck(cut, count));
      mutations++;
      if (walker !== reference) {
        t.fail(`round ${round}, mutation ${m}: walker ${walker}, decoding ${reference}`);
      }
      if (walker === "refused") refused++;
    }
  }
  t.ok(refused > 1000, `${refused} of ${mutations} damaged batches refused by both, the rest passed by both`);
  t.end();
});

t.test("a header name that is not UTF-8 is refused, as decoding refuses it", (t) => {
  const batch = encodeRecordBatch([{
    offsetDelta: 0,
    timestampDelta: 0,
    key: null,
    value: null,
    headers: [{ name: "ab", value: null }],
  }], {
    baseOffset: 0,
    baseTimestampMs: 1,
    maxTimestampMs: 1,
    timestampType: "create_time",
  });
  const name = batch.indexOf(0x61);
  batch[name] = 0xff;
  t.throws(() => checkRecordFraming(batch, 1), /a header's name is not UTF-8/);
  t.end();
});
