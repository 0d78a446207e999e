import t from "tap";
import { fileLineCount, functionLengths, longerThan } from "../../scripts/lib/line_counts.ts";

/** A function declaration spanning exactly `lines` lines: its header, `lines - 2` statements, its brace. */
function functionOf(name: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`);
  return [`function ${name}() {`, ...body, "}"].join("\n");
}

t.test("a function of 71 lines is over a limit of 70, one of 70 is not", (t) => {
  const source = `${functionOf("seventy", 70)}\n\n${functionOf("seventyOne", 71)}\n`;
  const lengths = functionLengths(source);
  t.same(lengths, [
    { name: "seventy", line: 1, lines: 70 },
    { name: "seventyOne", line: 72, lines: 71 },
  ]);
  t.same(longerThan(lengths, 70).map((f) => f.name), ["seventyOne"]);
  t.end();
});

t.test("nested functions count toward the function that holds them and are not listed on their own", (t) => {
  const source = [
    "/** A doc comment is not counted. */",
    "export function outer(): () => number {",
    "  const inner = () => {",
    "    return 1;",
    "  };",
    "  class Local {",
    "    method(): number {",
    "      return 2;",
    "    }",
    "  }",
    "  return () => inner() + new Local().method();",
    "}",
    "",
  ].join("\n");
  t.same(functionLengths(source), [{ name: "outer", line: 2, lines: 11 }]);
  t.end();
});

t.test("methods, constructors, accessors and arrows assigned to names are measured and named", (t) => {
  const source = [
    "export class Box {",
    "  #size = 0;",
    "  readonly grow = (by: number) => {",
    "    this.#size += by;",
    "  };",
    "  constructor() {}",
    "  get size(): number {",
    "    return this.#size;",
    "  }",
    "  #reset(): void {",
    "    this.#size = 0;",
    "  }",
    "  overloaded(a: string): void;",
    "  overloaded(a: unknown): void {}",
    "}",
    "const arrow = (x: number) =>",
    "  x + 1;",
    "const table = { pick() { return 1; } };",
    "[1].map((n) => n);",
    "interface Shape { area(): number }",
    "",
  ].join("\n");
  t.same(functionLengths(source), [
    { name: "Box.grow", line: 3, lines: 3 },
    { name: "Box.constructor", line: 6, lines: 1 },
    { name: "Box.size", line: 7, lines: 3 },
    { name: "Box.#reset", line: 10, lines: 3 },
    { name: "Box.overloaded", line: 14, lines: 1 },
    { name: "arrow", line: 16, lines: 2 },
    { name: "pick", line: 18, lines: 1 },
    { name: "<anonymous>", line: 19, lines: 1 },
  ], "overload signatures and interface members have no body and are not counted");
  t.end();
});

t.test("a file's lines are counted as wc -l does, with a last line that has no newline", (t) => {
  t.equal(fileLineCount(""), 0);
  t.equal(fileLineCount("a\n"), 1);
  t.equal(fileLineCount("a\nb"), 2);
  t.equal(fileLineCount("a\n\nb\n"), 3);
  t.same(longerThan([{ lines: 400 }, { lines: 401 }], 400), [{ lines: 401 }]);
  t.end();
});
