import { CoordinatorAnswerError } from "../coordinator_errors.ts";

/**
 * Splits a byte stream of newline-separated JSON documents (etcd's streamed watch answers) into
 * parsed documents, with no I/O: bytes in, documents out. A line longer than `lineBytesMax` is an
 * error, so a broken peer cannot make the buffer grow without bound.
 */
export class JsonLines {
  readonly #lineBytesMax: number;
  readonly #decoder = new TextDecoder();
  #pending = "";

  constructor(lineBytesMax: number) {
    this.#lineBytesMax = lineBytesMax;
  }

  /** The documents completed by `bytes`, in order. */
  push(bytes: Uint8Array): unknown[] {
    this.#pending += this.#decoder.decode(bytes, { stream: true });
    const documents: unknown[] = [];
    let newline = this.#pending.indexOf("\n");
    while (newline >= 0) {
      const line = this.#pending.slice(0, newline).trim();
      this.#pending = this.#pending.slice(newline + 1);
      if (line !== "") documents.push(parseLine(line));
      newline = this.#pending.indexOf("\n");
    }
    if (this.#pending.length > this.#lineBytesMax) {
      throw new CoordinatorAnswerError(
        `Cannot read a streamed answer: a line is longer than ${this.#lineBytesMax} bytes`,
      );
    }
    return documents;
  }

  /** The last document, when the stream ended without a newline after it. */
  end(): unknown[] {
    const line = (this.#pending + this.#decoder.decode()).trim();
    this.#pending = "";
    return line === "" ? [] : [parseLine(line)];
  }
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch (error) {
    throw new SyntaxError(`Cannot read a streamed answer: a line is not JSON (${line.slice(0, 80)})`, {
      cause: error,
    });
  }
}
