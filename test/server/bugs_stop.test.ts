import { join } from "node:path";
import t, { type Test } from "tap";
import { StrataApiError, StrataClient } from "../../src/client/strata_client.ts";
import { loadConfig } from "../../src/config/load_config.ts";
import { AssertionError } from "../../src/runtime/assert.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import type { CreateOptions, DiskFile, OpenOptions } from "../../src/runtime/disk/disk.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Logger } from "../../src/runtime/logger.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { StrataServer } from "../../src/server/server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { passTime, virtualSteps, waitFor } from "../helpers/wait_for.ts";

// A bug is never retried or swallowed: a deliberately broken assertion, raised from under a real
// server (a disk whose file operations break one when told to), shows its stack and cause in the
// log and stops what it guards: the partition whose write it broke, or the process for a
// background duty (here an upload), and no retry loop takes it for a failure to try again.

/** A real disk whose files' reads or writes break an assertion, for the paths a predicate names. */
class BuggyDisk extends NodeDisk {
  breakWrites: (path: string) => boolean = () => false;
  breakReads: (path: string) => boolean = () => false;
  /** Operations that broke the assertion, by path. */
  readonly broken: string[] = [];

  override async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return this.#wrap(await super.open(path, options));
  }

  override async createExclusive(path: string, options?: CreateOptions): Promise<DiskFile> {
    return this.#wrap(await super.createExclusive(path, options));
  }

  #break(what: string, path: string): never {
    this.broken.push(path);
    const cause = new Error(`the test broke the ${what} of ${path}`);
    throw new AssertionError(`Assertion failed: a ${what} of a file stays within what it owns`, { cause });
  }

  #wrap(file: DiskFile): DiskFile {
    return {
      path: file.path,
      readAt: (buffer, position) =>
        this.breakReads(file.path) ? this.#break("read", file.path) : file.readAt(buffer, position),
      writeAt: (data, position) =>
        this.breakWrites(file.path) ? this.#break("write", file.path) : file.writeAt(data, position),
      append: (data) => this.breakWrites(file.path) ? this.#break("write", file.path) : file.append(data),
      sizeBytes: () => file.sizeBytes(),
      truncate: (lengthBytes) => file.truncate(lengthBytes),
      sync: () => file.sync(),
      close: () => file.close(),
    };
  }
}

/** A server on `disk` with a virtual clock, whose log lines are kept (parsed) in `lines`. */
async function serverOn(t: Test, disk: BuggyDisk, env: Record<string, string> = {}) {
  const dir = tempDir(t);
  const clock = new VirtualClock();
  const lines: Record<string, unknown>[] = [];
  const logger = new Logger({ level: "info", sink: (line) => lines.push(JSON.parse(line)) });
  const { config } = loadConfig("", "test", { STRATA_SYSTEM_PATH: join(dir, "data"), ...env });
  const server = await StrataServer.open({ config, logger, clock, disk, rng: new Rng(7) });
  t.teardown(() => server.close());
  const client = new StrataClient({ baseUrl: "http://strata.test", encoding: "json", fetch: server.handler });
  await client.createStream("s");
  const logged = (prefix: string) => lines.filter((l) => String(l["msg"]).startsWith(prefix));
  return { clock, lines, client, logged };
}

const payload = (bytes: number) => new Uint8Array(bytes).fill(7);

t.test("a write that breaks an assertion stops its partition, logged once with its stack and cause", async (t) => {
  const disk = new BuggyDisk();
  const { clock, client, logged } = await serverOn(t, disk);
  await client.createTopic("s", { name: "t", partitions: 2, tiered: false });
  await client.produce("s", "t", [{ payload: payload(100) }], 0);
  disk.breakWrites = (path) => path.includes("/partitions/0/") && path.endsWith(".log");

  const refused = await client.produce("s", "t", [{ payload: payload(100) }], 0).catch((e) => e);
  t.ok(refused instanceof StrataApiError && refused.status === 503, `refused: ${refused}`);
  t.match((refused as StrataApiError).code, "partition_unavailable");
  await waitFor("the shard to log the stop", () => logged("bug: a write of partition").length > 0, {
    deadlineMs: 10_000,
    pace: virtualSteps(clock, 10),
  });
  const [line] = logged("bug: a write of partition");
  t.match(line, {
    level: "error",
    partition: "1/1/0",
    error: {
      name: "AssertionError",
      message: /a write of a file stays within what it owns/,
      causes: [{ name: "Error", message: /the test broke the write of .*partitions\/0\// }],
      stack: /^Error: the test broke the write[^\n]*\n\s+at /,
    },
  }, "the bug, its cause, and the stack of the first error raised");

  const again = await client.produce("s", "t", [{ payload: payload(100) }], 0).catch((e) => e);
  t.match((again as StrataApiError).message, /an earlier write failed/, "the partition stays stopped");
  await passTime(1000, virtualSteps(clock, 10));
  t.equal(disk.broken.length, 1, "the broken write was never tried again");
  t.equal(logged("bug: a write of partition").length, 1, "and its stop is logged once");
  const other = await client.produce("s", "t", [{ payload: payload(100) }], 1);
  t.equal(other.base_offset, 0, "the other partition serves on");
});

t.test("an upload that breaks an assertion is never retried: logged as a bug, it stops the process", async (t) => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", listener);
  t.teardown(() => void process.off("unhandledRejection", listener));
  const disk = new BuggyDisk();
  const { clock, client, logged } = await serverOn(t, disk);
  await client.createTopic("s", { name: "t", partitions: 1, segment_size: "1 MiB" });
  // The sealed segment's reads are the upload's alone: nothing polls this topic.
  disk.breakReads = (path) => path.endsWith(`${"0".repeat(20)}.log`);
  for (let i = 0; i < 12; i++) await client.produce("s", "t", [{ payload: payload(100_000) }], 0);

  await waitFor("the bug to leave the upload", () => unhandled.length > 0, {
    deadlineMs: 20_000,
    pace: virtualSteps(clock, 10),
  });
  t.ok(unhandled[0] instanceof AssertionError, "thrown on, unhandled: the entry point ends the process");
  t.match(logged("bug: an upload threw; the process stops")[0], {
    level: "error",
    partition: "1/1/0",
    start_offset: 0,
    error: { name: "AssertionError", causes: [{ message: /the test broke the read/ }], stack: /\n\s+at / },
  });
  await passTime(5000, virtualSteps(clock, 10));
  t.equal(disk.broken.length, 1, "the upload was never tried again");
  t.same(logged("upload failed"), [], "nor taken for a failure to retry");
});
