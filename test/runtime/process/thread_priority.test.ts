import { getPriority } from "node:os";
import t from "tap";
import { configSchema } from "../../../src/config/schema.ts";
import { loadConfig } from "../../../src/config/load_config.ts";
import { AssertionError } from "../../../src/runtime/assert.ts";
import { Logger } from "../../../src/runtime/logger.ts";
import { OsThreadControl } from "../../../src/runtime/process/os_thread_control.ts";
import { setLoopThreadNice, type ThreadControl } from "../../../src/runtime/process/thread_priority.ts";
import { applyLoopThreadNice } from "../../../src/server/server.ts";

/** A thread at `nice` that refuses a raise of its priority unless privileged, as Linux does. */
class FakeThreadControl implements ThreadControl {
  readonly set: number[] = [];
  constructor(public nice = 0, readonly privileged = true) {}
  ownNice(): number {
    return this.nice;
  }
  setOwnNice(nice: number): void {
    if (nice < this.nice && !this.privileged) {
      throw Object.assign(new Error("permission denied"), { code: "EACCES" });
    }
    this.set.push(nice);
    this.nice = nice;
  }
}

function capture(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  return {
    logger: new Logger({ level: "info", sink: (line) => lines.push(line) }),
    lines: () => lines.map((l) => JSON.parse(l)),
  };
}

t.test("the loop's thread gets the configured nice value and the outcome says what it was", (t) => {
  const control = new FakeThreadControl(0);
  t.same(setLoopThreadNice(control, -10), { kind: "set", nice: -10, wasNice: 0 });
  t.same(control.set, [-10]);
  t.end();
});

t.test("a setting of 0 leaves the thread as it is, whatever it inherited", (t) => {
  const control = new FakeThreadControl(5);
  t.same(setLoopThreadNice(control, 0), { kind: "unchanged" });
  t.same(control.set, [], "nothing was set");
  t.end();
});

t.test("a refused raise keeps the inherited value and says why", (t) => {
  const control = new FakeThreadControl(0, false);
  const outcome = setLoopThreadNice(control, -10);
  t.match(outcome, {
    kind: "refused",
    nice: -10,
    keptNice: 0,
    reason: /^EACCES: .*CAP_SYS_NICE or RLIMIT_NICE/,
  });
  t.same(control.set, []);
  // Lowering one's own priority needs no privilege.
  t.same(setLoopThreadNice(control, 5), { kind: "set", nice: 5, wasNice: 0 });
  t.end();
});

t.test("a nice value Linux does not have is refused by assertion", (t) => {
  t.throws(() => setLoopThreadNice(new FakeThreadControl(), -21), AssertionError);
  t.throws(() => setLoopThreadNice(new FakeThreadControl(), 20), AssertionError);
  t.throws(() => setLoopThreadNice(new FakeThreadControl(), 1.5), AssertionError);
  t.end();
});

t.test("the server warns, naming the key, when the loop's priority cannot be raised", (t) => {
  const { logger, lines } = capture();
  applyLoopThreadNice(new FakeThreadControl(0, false), -10, logger);
  const [warning] = lines();
  t.equal(warning!.level, "warn");
  t.match(warning!.msg, /^Cannot set the event loop thread's nice value to -10: EACCES: .*; it keeps 0$/);
  t.equal(warning!.key, "[system] loop_thread_nice");
  t.equal(lines().length, 1, "nothing else is logged");
  t.end();
});

t.test("the server logs the priority it set, and nothing when asked for no change", (t) => {
  const set = capture();
  applyLoopThreadNice(new FakeThreadControl(0), -10, set.logger);
  t.match(set.lines(), [{ level: "info", msg: "loop thread priority", nice: -10, was_nice: 0 }]);
  const unchanged = capture();
  applyLoopThreadNice(new FakeThreadControl(0), 0, unchanged.logger);
  t.same(unchanged.lines(), []);
  t.end();
});

t.test("the key's default is -10, its range Linux's, and the environment can set a negative value", (t) => {
  t.equal(configSchema.system.loop_thread_nice.default, -10);
  t.equal(loadConfig("", "test.toml", {}).config.system.loopThreadNice, -10);
  t.throws(
    () => loadConfig("[system]\nloop_thread_nice = -21\n", "bad.toml", {}),
    /\[system\] loop_thread_nice/,
  );
  t.throws(
    () => loadConfig("[system]\nloop_thread_nice = 20\n", "bad.toml", {}),
    /\[system\] loop_thread_nice/,
  );
  t.throws(() => loadConfig('[system]\nloop_thread_nice = "high"\n', "bad.toml", {}), /expected an integer/);
  const fromEnv = loadConfig("", "test.toml", { STRATA_SYSTEM_LOOP_THREAD_NICE: "-5" }).config;
  t.equal(fromEnv.system.loopThreadNice, -5, "a negative value from the environment");
  t.end();
});

t.test("the real control reads the calling thread's nice value and sets it to what it is", (t) => {
  // Setting a thread to the value it has is allowed to anyone and changes nothing.
  const control = new OsThreadControl();
  const own = control.ownNice();
  t.equal(own, getPriority(0));
  control.setOwnNice(own);
  t.equal(control.ownNice(), own);
  t.throws(() => control.setOwnNice(-100), "a value out of range is refused by the system");
  t.end();
});
