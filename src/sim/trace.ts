/**
 * The simulator's record of a run: a running 64-bit FNV-1a hash over every event, so two runs of
 * one seed can be compared by one line (`trace_hash=…`), and the last events kept as the trail a
 * failing run prints.
 */
export class Trace {
  #hash = 0xcbf29ce484222325n;
  readonly #trail: string[] = [];
  readonly #trailMax: number;
  events = 0;

  constructor(trailMax = 200) {
    this.#trailMax = trailMax;
  }

  record(atMs: number, event: string): void {
    const line = `${atMs.toFixed(0)} ${event}`;
    for (let i = 0; i < line.length; i++) {
      this.#hash ^= BigInt(line.charCodeAt(i));
      this.#hash = (this.#hash * 0x100000001b3n) & 0xffffffffffffffffn;
    }
    this.events++;
    this.#trail.push(line);
    if (this.#trail.length > this.#trailMax) this.#trail.shift();
  }

  get hash(): string {
    return this.#hash.toString(16).padStart(16, "0");
  }

  get trail(): readonly string[] {
    return this.#trail;
  }
}
