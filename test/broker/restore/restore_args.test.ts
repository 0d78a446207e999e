import t from "tap";
import { parseRestoreArgs } from "../../../src/broker/restore/restore_args.ts";

t.test("restore arguments: every option in both spellings, and clear refusals", (t) => {
  t.same(parseRestoreArgs(["--stream", "kafka", "--topic=orders"]), {
    request: { stream: "kafka", topic: "orders", dryRun: false },
    configPath: "./config.toml",
    help: false,
  });
  t.same(
    parseRestoreArgs([
      "--stream=s",
      "--topic",
      "t",
      "--partition",
      "3",
      "--as",
      "t2",
      "--cluster-id",
      "c1",
      "--dry-run",
      "--config",
      "x.toml",
    ]),
    {
      request: { stream: "s", topic: "t", partition: 3, as: "t2", clusterId: "c1", dryRun: true },
      configPath: "x.toml",
      help: false,
    },
  );
  t.equal(parseRestoreArgs(["--help"]).help, true, "--help needs nothing else");
  t.throws(() => parseRestoreArgs(["--topic", "t"]), /--stream is required/);
  t.throws(() => parseRestoreArgs(["--stream", "s", "--topic"]), /--topic needs a value/);
  t.throws(
    () => parseRestoreArgs(["--stream", "s", "--topic", "t", "--partition", "-1"]),
    /--partition must be a partition id/,
  );
  t.throws(
    () => parseRestoreArgs(["--stream", "s", "--topic", "t", "--force"]),
    /unknown argument "--force"/,
  );
  t.end();
});
