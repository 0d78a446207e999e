import { memoryUsage } from "node:process";
import t from "tap";
import { AssertionError } from "../../../src/runtime/assert.ts";
import {
  ExternalMemoryReserve,
  externalMemoryReserveBytesMax,
} from "../../../src/runtime/memory/external_memory_reserve.ts";
import { reserveExternalMemory } from "../../../src/server/server.ts";
import { ConfigError } from "../../../src/config/config_error.ts";

const MiB = 1024 * 1024;

t.test("the engine counts a reserve as external memory, which is what raises its collection limit", (t) => {
  // First in the file: a reserve released earlier could be collected in between and hide this one.
  const before = memoryUsage().external;
  const reserve = new ExternalMemoryReserve(256 * MiB);
  t.ok(memoryUsage().external - before >= 256 * MiB, "external memory grew by the reserve");
  reserve.release();
  t.end();
});

t.test("a reserve costs address space, not resident memory: 1 GiB adds under 64 MiB of RSS", (t) => {
  // If the allocator touched the pages (a memset, say), RSS would grow by the whole GiB.
  const before = memoryUsage.rss();
  const reserve = new ExternalMemoryReserve(1024 * MiB);
  const grownBytes = memoryUsage.rss() - before;
  t.equal(reserve.heldBytes, 1024 * MiB);
  t.ok(grownBytes < 64 * MiB, `RSS grew ${(grownBytes / MiB).toFixed(1)} MiB`);
  reserve.release();
  t.end();
});

t.test("release drops the buffer (idempotently); a 0 reserve holds nothing", (t) => {
  const reserve = new ExternalMemoryReserve(MiB);
  reserve.release();
  reserve.release();
  t.equal(reserve.heldBytes, 0);
  t.equal(reserve.sizeBytes, MiB, "the configured size stays readable");
  t.equal(new ExternalMemoryReserve(0).heldBytes, 0);
  t.end();
});

t.test("sizes outside 0 to the maximum are refused by assertion", (t) => {
  t.throws(() => new ExternalMemoryReserve(-1), AssertionError);
  t.throws(() => new ExternalMemoryReserve(1.5), AssertionError);
  t.throws(() => new ExternalMemoryReserve(externalMemoryReserveBytesMax + 1), AssertionError);
  t.end();
});

t.test("a reserve the process cannot allocate stops start-up with an error naming the key", (t) => {
  const failing = () => {
    throw new RangeError("Array buffer allocation failed");
  };
  const error = t.throws(() => reserveExternalMemory(512 * MiB, failing)) as ConfigError;
  t.type(error, ConfigError);
  t.equal(error.key, "[system] external_memory_reserve");
  t.match(error.message, /536870912 bytes of address space could not be reserved .*set it lower, or 0/);
  // Anything but an allocation failure is not a configuration problem and passes through.
  t.throws(() =>
    reserveExternalMemory(MiB, () => {
      throw new TypeError("boom");
    }), TypeError);
  t.equal(reserveExternalMemory(MiB).heldBytes, MiB);
  t.end();
});
