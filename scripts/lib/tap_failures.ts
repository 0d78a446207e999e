/**
 * Collects the failures in tap's raw output, line by line, so the test runner can repeat them at
 * the end of a long run where a reader (or CI's excerpt of the log) sees them. Sans-I/O: text in,
 * a bounded list of failures out.
 */

/** One failed test point: the subtests that hold it (the file first), its name, tap's diagnostics. */
export interface TapFailure {
  path: string[];
  name: string;
  diagnostics: string[];
}

/** Failures kept; later ones are counted but not kept. */
export const failuresKeptMax = 50;
/** Diagnostic lines kept per failure (tap's YAML block: the message, `found`, `wanted`, `at`). */
export const diagnosticLinesMax = 24;

export class TapFailureCollector {
  readonly failures: TapFailure[] = [];
  failuresDropped = 0;
  /** The open subtests, outermost (the test file) first; tap indents each level by 4 spaces. */
  #path: string[] = [];
  #partial = "";
  #collecting: { failure: TapFailure; indent: number } | null = null;
  /** Indent of the last failure kept in this file; a failure less indented is its parent's report. */
  #keptIndent = -1;

  /** Feeds a chunk of tap's output; lines may be split across chunks. */
  push(text: string): void {
    const lines = (this.#partial + text).split("\n");
    this.#partial = lines.pop() ?? "";
    for (const line of lines) this.#line(line);
  }

  /** Feeds the last, unterminated line, if any. */
  end(): void {
    if (this.#partial !== "") this.#line(this.#partial);
    this.#partial = "";
  }

  #line(line: string): void {
    if (this.#collecting !== null && this.#diagnostic(line)) return;
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
    if (subtest !== null) {
      const depth = Math.floor(subtest[1]!.length / 4);
      this.#path = [...this.#path.slice(0, depth), subtest[2]!];
      if (depth === 0) this.#keptIndent = -1;
      return;
    }
    const failed = /^(\s*)not ok \d+ - (.*)$/.exec(line);
    if (failed === null) return;
    // A failure is reported again by each test that holds it, each less indented than the last;
    // the innermost report is the one with the diagnostics.
    const indent = failed[1]!.length;
    if (indent < this.#keptIndent) {
      this.#keptIndent = indent;
      return;
    }
    this.#keptIndent = indent;
    const name = failed[2]!.replace(/ # time=[\d.]+m?s$/, "");
    if (this.failures.length >= failuresKeptMax) {
      this.failuresDropped += 1;
      return;
    }
    const failure = { path: this.#path.slice(0, Math.floor(indent / 4)), name, diagnostics: [] };
    this.failures.push(failure);
    this.#collecting = { failure, indent };
  }

  /** Takes a line of the YAML block under a failure; false once the block is over. */
  #diagnostic(line: string): boolean {
    const collecting = this.#collecting!;
    const indent = /^\s*/.exec(line)![0].length;
    const inside = line.trim() === "" || indent > collecting.indent;
    if (!inside || line.trim() === "...") {
      this.#collecting = null;
      return inside;
    }
    if (collecting.failure.diagnostics.length < diagnosticLinesMax) {
      collecting.failure.diagnostics.push(line.slice(collecting.indent));
    }
    return true;
  }

  /** The failures as the text the runner prints before its closing line; empty when none. */
  report(): string {
    if (this.failures.length === 0) return "";
    const blocks = this.failures.map((f) =>
      [`not ok: ${[...f.path, f.name].join(" > ")}`, ...f.diagnostics.map((line) => `    ${line}`)].join("\n")
    );
    const dropped = this.failuresDropped > 0
      ? [`(${this.failuresDropped} more failures not repeated here)`]
      : [];
    return ["", "# Failures", ...blocks, ...dropped].join("\n");
  }
}
