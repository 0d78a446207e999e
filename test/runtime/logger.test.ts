import t from "tap";
import { Logger } from "../../src/runtime/logger.ts";
function capture(level: "debug" | "info" | "warn" | "error" = "info", secrets: string[] = []) {
  const lines: string[] = [];
  const logger = new Logger({ level, sink: (l) => lines.push(l), secrets, wallMs: () => 0 });
  return { logger, lines };
}

t.test("lines are JSON with level, message, context and fields", (t) => {
  const { logger, lines } = capture();
  logger.child({ shard: "1" }).info("uploaded", { offset: 10, error: new Error("x") });
  const record = JSON.parse(lines[0]!);
  t.same(record, {
    ts: "1970-01-01T00:00:00.000Z",
    level: "info",
    msg: "uploaded",
    shard: "1",
    offset: 10,
    error: { name: "Error", message: "x" },
  });
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
  });
  const line = lines[0]!;
  t.notMatch(line, /abc|xyz|AKIA|s3cr3t-value-123/);
  t.match(line, /"secret_key":"\[redacted\]"/);
  t.match(line, /the key \[redacted\] leaked/);
  t.end();
});
