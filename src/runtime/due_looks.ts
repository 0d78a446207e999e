import { assert } from "./assert.ts";
import { DueHeap } from "./due_heap.ts";

/**
 * Which keys a tick looks at: those touched since the last tick (something happened to them), and
 * those whose next look is due (`DueHeap`), at most `dueLooksPerTickMax` of the latter per tick.
 * Every key is held with a due time no later than `idleLookIntervalMs` after its last look, so a key
 * nothing happens to costs one look per interval, and a look that knows when time alone changes its
 * answer (an age limit passing) brings its next one forward to then. An idle tick thereby costs
 * `keys / idleLookIntervalMs` looks, not one per key per second.
 */
export class DueLooks<K> {
  readonly #idleLookIntervalMs: number;
  readonly #dueLooksPerTickMax: number;
  readonly #due = new DueHeap<K>();
  /** Keys touched since the last tick; only held keys, so bounded by them. */
  readonly #touched = new Set<K>();

  constructor(options: { idleLookIntervalMs: number; dueLooksPerTickMax: number }) {
    assert(options.idleLookIntervalMs > 0, "Cannot pace looks: the idle look interval must be positive");
    assert(options.dueLooksPerTickMax >= 1, "Cannot pace looks: a tick must take at least one due look");
    this.#idleLookIntervalMs = options.idleLookIntervalMs;
    this.#dueLooksPerTickMax = options.dueLooksPerTickMax;
  }

  get size(): number {
    return this.#due.size;
  }

  has(key: K): boolean {
    return this.#due.dueAt(key) !== undefined;
  }

  /** Holds `key`, looked at from the first tick at or after `nowMs`. */
  add(key: K, nowMs: number): void {
    this.#due.bringForward(key, nowMs);
  }

  remove(key: K): void {
    this.#due.remove(key);
    this.#touched.delete(key);
  }

  /** The next tick looks at `key`, if it is held. */
  touch(key: K): void {
    if (this.has(key)) this.#touched.add(key);
  }

  /** `key`'s next look is no later than `dueMs`. */
  bringForward(key: K, dueMs: number): void {
    if (this.has(key)) this.#due.bringForward(key, dueMs);
  }

  /**
   * The keys this tick looks at: the touched ones, then the due ones (earliest first, at most the
   * share). Each is held again due an idle interval from now; a look may bring that forward.
   */
  take(nowMs: number): K[] {
    const taken = [...this.#touched];
    for (const key of this.#due.takeDue(nowMs, this.#dueLooksPerTickMax)) {
      if (!this.#touched.has(key)) taken.push(key);
    }
    this.#touched.clear();
    const nextMs = nowMs + this.#idleLookIntervalMs;
    for (const key of taken) this.#due.schedule(key, nextMs);
    return taken;
  }
}
