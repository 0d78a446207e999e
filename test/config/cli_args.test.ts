import t from "tap";
import { CliArgsError, parseServerArgs } from "../../src/config/cli_args.ts";

t.test("without --config the server reads ./config.toml", (t) => {
  t.same(parseServerArgs([]), { configPath: "./config.toml", configPathGiven: false, help: false });
  t.end();
});

t.test("--config PATH and --config=PATH select another file", (t) => {
  t.equal(parseServerArgs(["--config", "other.toml"]).configPath, "other.toml");
  t.equal(parseServerArgs(["--config=x.toml"]).configPath, "x.toml");
  t.equal(parseServerArgs(["--help"]).help, true);
  t.end();
});

t.test("bad arguments are refused with a clear message", (t) => {
  t.throws(() => parseServerArgs(["--config"]), CliArgsError);
  t.throws(() => parseServerArgs(["--conf", "x"]), /unknown argument "--conf"/);
  t.throws(() => parseServerArgs(["--config="]), /--config needs a path/);
  t.end();
});
