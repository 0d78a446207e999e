import { readFileSync } from "node:fs";
import t from "tap";
import { parse } from "smol-toml";
import { benchConfigText } from "../../scripts/lib/bench_config.ts";

const shipped = readFileSync(new URL("../../config.toml", import.meta.url), "utf8");

t.test("benchConfigText moves the data and the port and leaves every other line as shipped", (t) => {
  const text = benchConfigText(shipped, "/tmp/x $& y/data", null);
  const config = parse(text) as { system: Record<string, unknown>; http: Record<string, unknown> };
  t.equal(config.system["path"], "/tmp/x $& y/data", "a path is written as it is, even with $&");
  t.equal(config.http["address"], "127.0.0.1:0");
  t.equal(config.system["max_open_files"], 4096, "max_open_files as shipped unless asked");
  t.equal(text.split("\n").length, shipped.split("\n").length);
  t.end();
});

// A config that does not list the key gets it in [system]; one that lists it has its line replaced
// rather than repeated (a repeated key is a TOML error).
t.test("benchConfigText sets max_open_files whether or not the config lists it", (t) => {
  const added = parse(benchConfigText(shipped.replace(/^max_open_files.*\n/m, ""), "/d", 500)) as {
    system: Record<string, unknown>;
  };
  t.equal(added.system["max_open_files"], 500);
  const replaced = benchConfigText(shipped, "/d", 700);
  t.equal((parse(replaced) as { system: Record<string, unknown> }).system["max_open_files"], 700);
  t.equal(replaced.match(/^max_open_files/gm)!.length, 1);
  t.end();
});

t.test("benchConfigText refuses a config whose lines to edit moved", (t) => {
  t.throws(
    () => benchConfigText(shipped.replace('path = "./data"', 'path = "/srv"'), "/d", null),
    /has no line/,
  );
  t.throws(() => benchConfigText("[http]\n", "/d", null), /Cannot write the config/);
  t.end();
});
