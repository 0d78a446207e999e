import t from "tap";
import { loggedCausesMax, Logger } from "../../src/runtime/logger.ts";

function capture(level: "debug" | "info" | "warn" | "error" = "info", secrets: string[] = []) {
  const lines: string[] = [];
  const logger = new Logger({ level, sink: (l) => lines.push(l), secrets, wallMs: () => 0 });
  return { logger, lines };
}

t.test("lines are JSON with level, message, context and fields", (t) => {
  const { logger, lines } = capture();
  logger.child({ shard: "1" }).info("uploaded", { offset: 10, error: new Error("x") });
  const record = JSON.parse(lines[0]!);
  t.match(record, {
    ts: "1970-01-01T00:00:00.000Z",
    level: "info",
    msg: "uploaded",
    shard: "1",
    offset: 10,
    error: { name: "Error", message: "x", stack: /^Error: x\n\s+at /m },
  });
  t.notOk("causes" in record.error, "an error without a cause lists none");
  t.end();
});

t.test("an error's line carries its whole cause chain and the stack of the first error raised", (t) => {
  const { logger, lines } = capture();
  function readSuperblock(): never {
    throw Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" });
  }
  let failure: Error | null = null;
  try {
    try {
      readSuperblock();
    } catch (cause) {
      throw new TypeError("Cannot read the superblock: it is missing", { cause });
    }
  } catch (cause) {
    failure = new Error("Cannot open partition 1/1/0", { cause });
  }
  logger.error("partition refused", { error: failure });
  const logged = JSON.parse(lines[0]!).error;
  t.equal(logged.message, "Cannot open partition 1/1/0");
  t.same(logged.causes, [
    { name: "TypeError", message: "Cannot read the superblock: it is missing" },
    { name: "Error", message: "ENOENT: no such file", code: "ENOENT" },
  ], "every cause, outermost first, each with its code");
  t.match(logged.stack, /^Error: ENOENT: no such file\n\s+at readSuperblock/, "the first error's stack");
  t.end();
});

t.test("a cause chain that loops or runs long is cut, and a cause that is no Error is named", (t) => {
  const { logger, lines } = capture();
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  a.cause = b;
  logger.error("loop", { error: a });
  t.same(JSON.parse(lines[0]!).error.causes, [{ name: "Error", message: "b" }], "a cycle ends at the repeat");
  let long = new Error("deepest");
  for (let i = 0; i < 20; i++) long = new Error(`level ${i}`, { cause: long });
  logger.error("long", { error: long });
  t.equal(JSON.parse(lines[1]!).error.causes.length, loggedCausesMax, "at most loggedCausesMax causes");
  logger.error("odd", { error: new Error("wrapped", { cause: "a string" }) });
  t.same(JSON.parse(lines[2]!).error.causes, [{ name: "string", message: "a string" }]);
  t.end();
});

t.test("lines below the level are dropped", (t) => {
  const { logger, lines } = capture("warn");
  logger.debug("a");
  logger.info("b");
  logger.warn("c");
  logger.error("d");
  t.same(lines.map((l) => JSON.parse(l).msg), ["c", "d"]);
  t.end();
});

t.test("secret-looking fields and known secret values are never printed", (t) => {
  const { logger, lines } = capture("info", ["s3cr3t-value-123"]);
  logger.info("request", {
    secret_key: "abc",
    authorization: "Bearer xyz",
    accessKey: "AKIA",
    note: "the key s3cr3t-value-123 leaked into a message",
    error: new Error("outer", { cause: new Error("signed with s3cr3t-value-123") }),
  });
  const line = lines[0]!;
  t.notMatch(line, /abc|xyz|AKIA|s3cr3t-value-123/);
  t.match(line, /"secret_key":"\[redacted\]"/);
  t.match(line, /the key \[redacted\] leaked/);
  t.end();
});
