import t from "tap";
import {
  decodeRemoteMarker,
  encodeRemoteMarker,
  MarkerError,
  remoteMarkerBytes,
} from "../../../src/log/remote/remote_marker.ts";
import { crc32c, initCrc32c } from "../../../src/runtime/checksum/crc32c.ts";
import { FormatVersionError } from "../../../src/runtime/format_version_error.ts";

await initCrc32c();
const marker = {
  startOffset: 1_000_000,
  endOffset: 1_999_999,
  sizeBytes: 1_073_741_824,
  indexSizeBytes: 4_194_304,
  startTimestampUs: 1_795_000_000_000_000,
  endTimestampUs: 1_795_000_100_000_000,
  maxTimestampUs: 1_795_000_100_000_000,
  createdRevision: "fedcba9876543210",
  purgeGeneration: 3,
  logCrc32: 0xdeadbeef,
  merged: false,
};

t.test("a marker is 128 bytes and round-trips every field", (t) => {
  const bytes = encodeRemoteMarker(marker);
  t.equal(bytes.length, remoteMarkerBytes);
  t.same(decodeRemoteMarker(bytes), marker);
  t.same(
    decodeRemoteMarker(encodeRemoteMarker({ ...marker, createdRevision: "0000000000000001" }))
      .createdRevision,
    "0000000000000001",
  );
  t.end();
});

t.test("any flipped byte in the record, a wrong size or magic is refused", (t) => {
  const bytes = encodeRemoteMarker(marker);
  const accepted: number[] = [];
  for (let i = 0; i < 112; i++) {
    const copy = bytes.slice();
    copy[i]! ^= 0x04;
    try {
      decodeRemoteMarker(copy);
      accepted.push(i);
    } catch (error) {
      if (!(error instanceof MarkerError)) throw error;
    }
  }
  t.same(accepted, [], "every byte up to the checksum is covered");
  t.throws(() => decodeRemoteMarker(bytes.subarray(0, 127)), /expected 128 bytes/);
  t.end();
});

t.test("a whole marker of another version is refused by name, not as a torn one", (t) => {
  const bytes = encodeRemoteMarker(marker);
  const view = new DataView(bytes.buffer);
  view.setUint16(8, 1, true);
  view.setBigUint64(104, BigInt(crc32c(bytes.subarray(0, 104))), true);
  let error: unknown = null;
  try {
    decodeRemoteMarker(bytes);
  } catch (e) {
    error = e;
  }
  t.ok(error instanceof FormatVersionError, "a FormatVersionError, which recovery never removes");
  t.notOk(error instanceof MarkerError);
  t.match((error as Error).message, /format version 1, this server reads format version 2/);
  t.end();
});

t.test("a merged segment's marker says so in its flags; a flag this version does not know is refused", (t) => {
  const bytes = encodeRemoteMarker({ ...marker, merged: true });
  t.equal(new DataView(bytes.buffer).getUint16(10, true), 1);
  t.same(decodeRemoteMarker(bytes), { ...marker, merged: true });
  t.equal(new DataView(encodeRemoteMarker(marker).buffer).getUint16(10, true), 0);
  const view = new DataView(bytes.buffer);
  view.setUint16(10, 0x3, true);
  view.setBigUint64(104, BigInt(crc32c(bytes.subarray(0, 104))), true);
  t.throws(() => decodeRemoteMarker(bytes), /unknown flags 0x3/);
  t.end();
});
